"""Undefined lanes of small float vectors (and fields of float structs) made zeros before AD.

Clang and LLVM build vectors from ``poison`` (``insertelement <2 x float> poison, ...``)
and leave lanes nobody reads undefined (``shufflevector %v, poison, <1, poison>``). The
primal never looks at those lanes, but the derivative does: the adjoint of a lane-wise
product multiplies a zero adjoint by the primal lane, and ``0 * poison`` is poison, which
then flows into the lanes that matter. So, in the body about to be differentiated (a copy:
the primal function is untouched), every ``poison``/``undef`` vector of floats becomes a
zero vector and every undefined shuffle lane picks a zero lane. Both are refinements LLVM
itself may make (poison may be replaced by any value), so the primal computes the same.
"""

from __future__ import annotations

from zymase.autodiff.type_rules import is_differentiable_type, is_float_vector
from zymase.ir import DenseArrayBase, DenseIntOrFPElementsAttr, Operation, Region, i1, i32, llvm, llvm_ext
from zymase.ir import VectorType, is_float_type
from zymase.analysis.op_classes import is_a

_UNDEFINED = ("llvm.mlir.poison", "llvm.mlir.undef")


def _zeros(t: VectorType) -> Operation:
    return llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(t, [0.0] * t.get_shape()[0]), t)


def _is_zeros(value) -> bool:
    owner = getattr(value, "owner", None)
    return isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr) and all(
        x == 0.0 for x in owner.value.get_values())


def define_vector_lanes(region: Region) -> None:
    for block in region.blocks:
        for op in list(block.ops):
            t = op.results[0].type if op.results else None
            if op.name in _UNDEFINED and (is_float_vector(t) or (is_differentiable_type(t) and not is_float_type(t))):
                # (float structs too: {double, double} built from poison by insertvalue)
                zero = _zeros(t) if is_float_vector(t) else llvm.ZeroOp.build(result_types=[t])
                block.insert_op_before(zero, op)
                op.results[0].replace_all_uses_with(zero.results[0])
                block.erase_op(op)
    for block in region.blocks:
        for op in list(block.ops):
            if is_a(op, llvm.ShuffleVectorOp) and is_float_vector(op.results[0].type):
                _define_shuffle_lanes(block, op)


def _define_shuffle_lanes(block, op: llvm.ShuffleVectorOp) -> None:
    mask = list(op.mask.get_values())
    if all(lane >= 0 for lane in mask):
        return
    width = op.v1.type.get_shape()[0]
    if _is_zeros(op.v2) or _is_zeros(op.v1):
        zero_lane = width if _is_zeros(op.v2) else 0
        new = llvm.ShuffleVectorOp(op.v1, op.v2, DenseArrayBase.from_list(i32, [
            zero_lane if lane < 0 else lane for lane in mask]), op.results[0].type)
        block.insert_op_before(new, op)
        op.results[0].replace_all_uses_with(new.results[0])
        block.erase_op(op)
        return
    # both operands defined: take lane 0 for the undefined lanes, then zero them
    t = op.results[0].type
    new = llvm.ShuffleVectorOp(op.v1, op.v2, DenseArrayBase.from_list(i32, [max(lane, 0) for lane in mask]), t)
    undefined = llvm.ConstantOp(DenseIntOrFPElementsAttr.from_list(VectorType(i1, [len(mask)]),
                                                                   [1 if lane < 0 else 0 for lane in mask]),
                                VectorType(i1, [len(mask)]))
    zero = _zeros(t)
    select = llvm_ext.SelectOp(undefined.results[0], zero.results[0], new.results[0])
    for o in (new, undefined, zero, select):
        block.insert_op_before(o, op)
    op.results[0].replace_all_uses_with(select.results[0])
    block.erase_op(op)
