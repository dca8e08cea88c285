"""Rounding to an integer by adding and subtracting a large constant, made a value
without derivative before AD.

``(a + 0x1.8p52) - 0x1.8p52`` is ``rint(a)`` in double: the sum's unit in the last place
is at least 1, so the addition drops a's fraction (musl's ``exp``/``rint``, fdlibm's
``TWO52``, Cephes' range reductions: ``kd = z + shift; kd -= shift``; the addition may
be contracted with a product into ``llvm.fmuladd``). Differentiated
operation by operation the pair is the identity, so the rounded value got a's
derivative, not rint's zero: ``sin(3x - k) + k x`` gave 3 cos(..) + k + 3x instead of
3 cos(..) + k (session 34). The result is passed through ``enzyme.ignore_derivatives``
(lowered to the value itself after AD), so the primal keeps its bits.

The constant must be at least 2^(p-1) in magnitude, p the precision of the float type
(2^52 for double, 2^23 for float), and the same value added and then subtracted (or
subtracted and added, or added as its negation); the sum may pass through a local slot
(a ``volatile`` one, as code that guards the rounding against the optimizer writes).
"""

from __future__ import annotations

from zymase.analysis.memory import is_marker
from zymase.ir import FloatAttr, Operation, Region, is_float_type, llvm
from zymase.ir import enzyme as ez
from zymase.ir.fast_ops import call_intrinsic

# the precision (significand bits, the implicit one included) of each float type
_PRECISION = {"f16": 11, "f32": 24, "f64": 53, "f80": 64}


def stop_rounding_shifts(region: Region) -> int:
    """Put ``enzyme.ignore_derivatives`` after every rounding pair of ``region``;
    returns how many."""
    count = 0
    for block in region.blocks:
        for op in list(block.ops):
            if not isinstance(op, (llvm.FAddOp, llvm.FSubOp)) or not is_float_type(op.results[0].type):
                continue
            if not _rounds(op):
                continue
            stop = ez.IgnoreDerivativesOp(op.results[0])
            stop.location = op.location
            # and behind an arithmetic fence: adjoint sums may reassociate (autodiff/flavor
            # accumulate), and LLVM took that as leave to reassociate into the rounding
            # when the sum met it (k * x's adjoint is k at a seed of 1: (a + C) - C + 1
            # became a + (1 - C), then a * a + 1 from fmuladd(a, a, C): 2.69 for 3)
            fence = call_intrinsic(f"llvm.arithmetic.fence.{op.results[0].type}", [stop.results[0]],
                                   [op.results[0].type])
            fence.location = op.location
            block.insert_op_after(stop, op)
            block.insert_op_after(fence, stop)
            op.results[0].replace_all_uses_with(fence.results[0])
            stop.operands = [op.results[0]]  # (replace_all_uses_with also rewired these two)
            fence.operands = [stop.results[0]]
            count += 1
    return count


def _rounds(op: Operation) -> bool:
    """Whether ``op`` undoes a large constant that its operand added: ``(a + C) - C``,
    ``(a - C) + C``, ``(C + a) - C``, ``(a + C) + (-C)``."""
    outer = _signed_constant(op, 1)  # what op adds: +C for fadd, -C for fsub
    if outer is None:
        return False
    inner_op = _stored_through_local(op.operands[0]) or op.operands[0].owner
    if isinstance(inner_op, (llvm.FAddOp, llvm.FSubOp)):
        inner = _signed_constant(inner_op, 1)
        if inner is None and isinstance(inner_op, llvm.FAddOp):
            inner = _signed_constant(inner_op, 0)
    elif _is_fused_multiply_add(inner_op):  # a * b + C, contracted (clang's -ffp-contract=on)
        inner = _signed_constant(inner_op, 2)
    else:
        return False
    precision = _PRECISION.get(str(op.results[0].type))
    return (inner is not None and precision is not None and inner == -outer
            and abs(inner) >= 2.0 ** (precision - 1))


def _stored_through_local(value) -> Operation | None:
    """For a load of a local slot (``volatile double t = a + C;``, which keeps the sum
    from being folded) whose only stores store the result of one op: that op."""
    load = value.owner
    if not isinstance(load, llvm.LoadOp) or not isinstance(load.ptr.owner, llvm.AllocaOp):
        return None
    stored = {use.operation.value.owner for use in load.ptr.uses
              if isinstance(use.operation, llvm.StoreOp) and use.index == 1}
    others = [use for use in load.ptr.uses
              if not (isinstance(use.operation, (llvm.StoreOp, llvm.LoadOp)) and use.index == len(use.operation.operands) - 1)
              and not is_marker(use.operation)]
    if len(stored) != 1 or others:
        return None  # (a slot whose address escapes, or that holds several values)
    only = next(iter(stored))
    return only if isinstance(only, Operation) else None


def _is_fused_multiply_add(op) -> bool:
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(("llvm.fmuladd.", "llvm.fma."))


def _signed_constant(op: Operation, index: int) -> float | None:
    """The constant that ``op`` adds through operand ``index`` (negated when an fsub
    subtracts it), if that operand is a constant."""
    owner = op.operands[index].owner
    if not isinstance(owner, llvm.ConstantOp) or not isinstance(owner.value, FloatAttr):
        return None
    value = owner.value.value.data
    return -value if isinstance(op, llvm.FSubOp) and index == 1 else value
