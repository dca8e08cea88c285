"""Fast builders of the ops AD emits by the thousand (constants, float and integer
arithmetic, calls), and the construction the extended dialects' own hot ops share.

xDSL's IRDL constructors match every argument against the op's definition
(``irdl_op_init``: operand and result groups, segment sizes, ``None`` filtering), which
costs 3-5x building the op itself; about a quarter of ``zymase cc``'s AD time on the
bench workloads went there (issue 29). These builders make the very op the xDSL
constructor makes (the same operands, result types and properties, in the same order;
``IRDLOperation.__post_init__`` fills the defaulted properties either way) through
:meth:`Operation.create`, and share the immutable attributes every such op carries.
Each is given its location, the unknown one, as the constructors' default: xDSL looks
that default up with an import statement per op (``Operation.__init__``'s
``_unknown_loc``), about as costly as the rest of a small op's construction.
``tests/python/test_fast_ops.py`` compares each with its constructor's op.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (UNKNOWN_LOC, DenseArrayBase, IntegerAttr, IntegerType, StringAttr, SymbolRefAttr,
                                   VectorType, i1, i32, i64)
from xdsl.ir import Attribute, Block, BlockArgument, OpResult, Operation, Region, SSAValue
from xdsl.ir.core import SSAValues, Use
from xdsl.irdl import IRDLOperation
from xdsl.irdl.operations import OptionalDef

_VALUE_CLASSES = frozenset({OpResult, BlockArgument})


def _value(v: SSAValue | Operation) -> SSAValue:
    """``SSAValue.get(v)``: a value as it is, or an op's single result. ``SSAValue`` is an
    ABC, and its ``isinstance`` test of a value (of a subclass, not the class) went
    through ``ABCMeta.__instancecheck__`` for every operand of every op built here."""
    return v if type(v) in _VALUE_CLASSES else SSAValue.get(v)


@functools.cache
def _defaults(cls: type[Operation]) -> tuple[tuple, tuple] | None:
    """The properties and the attributes (name, value) that ``IRDLOperation.__post_init__``
    fills in, in its order, when an op of ``cls`` is built without them; None for a class
    with a ``__post_init__`` of its own (built by xDSL's ``create``)."""
    if not issubclass(cls, IRDLOperation) or cls.__post_init__ is not IRDLOperation.__post_init__:
        return None
    op_def = cls.get_irdl_definition()
    if op_def is None:  # (an abstract class)
        return None
    return tuple((name, d.default_value) for name, d in op_def.properties.items()
                 if not isinstance(d, OptionalDef) and d.default_value is not None), \
        tuple((name, d.default_value) for name, d in op_def.attributes.items()
              if not isinstance(d, OptionalDef) and d.default_value is not None)


def build(cls: type[Operation], operands: Sequence[SSAValue] = (), result_types: Sequence[Attribute] = (),
          properties: dict[str, Attribute] | None = None, attributes: dict[str, Attribute] | None = None,
          successors: Sequence[Block] = (), location: Attribute = UNKNOWN_LOC) -> Operation:
    """``cls.create(...)`` of an op without regions: what ``Operation.__init__`` and
    ``IRDLOperation.__post_init__`` do, in their order, without their generic parts: the
    keyword arguments' defaults, the regions loop, the definition's defaults looked up and
    tested per op (here once per class), the empty successor list's uses, the name
    assertions. ``properties`` and ``attributes`` become
    the op's own (callers give fresh dicts)."""
    defaults = _defaults(cls)
    if defaults is None:
        return cls.create(operands=operands, result_types=result_types, properties=properties or {},
                          attributes=attributes or {}, successors=successors, location=location)
    op = cls.__new__(cls)
    _init(op, defaults, operands, result_types, properties, attributes, successors, location)
    return op


def _init(op: Operation, defaults: tuple[tuple, tuple], operands: Sequence[SSAValue],
          result_types: Sequence[Attribute], properties: dict[str, Attribute] | None,
          attributes: dict[str, Attribute] | None, successors: Sequence[Block], location: Attribute) -> None:
    _set_operands(op, operands)
    op.results = SSAValues([OpResult(t, op, i) for i, t in enumerate(result_types)])
    op.properties = properties = {} if properties is None else properties
    op.attributes = attributes = {} if attributes is None else attributes
    op.location = location
    if successors:
        op.successors = successors
    else:  # (set on the op as Operation.__init__ sets them: read from the op's own dict)
        op._successors = op._successor_uses = ()
    op.regions = ()
    for name, value in defaults[0]:
        if name not in properties:
            properties[name] = value
    for name, value in defaults[1]:
        if name not in attributes:
            attributes[name] = value


def _set_operands(op: Operation, operands: Sequence[SSAValue]) -> None:
    """``op.operands = operands`` for an op that has none yet (just made): xDSL's setter
    first takes the op off the use lists of its old operands, and adds each use through
    ``add_use``; here each use is made already linked in front of its value's list, as
    ``add_use`` leaves it (the same lists, in the same order)."""
    values = op._operands = SSAValues(operands)
    uses = []
    for index, value in enumerate(values):
        first = value.first_use
        use = Use(op, index, None, first)
        if first is not None:
            first._prev_use = use
        value.first_use = use
        uses.append(use)
    op._operand_uses = tuple(uses)


#: what the constructors set when given no flags (attributes are immutable: shared)
NO_FASTMATH = llvm.FastMathAttr(None)
_NO_OVERFLOW = IntegerAttr(0, 32)
_CCC = llvm.CallingConventionAttr("ccc")
_NO_BUNDLES = DenseArrayBase.from_list(i32, ())


@functools.lru_cache(maxsize=4096, typed=True)  # (typed: True is not 1)
def int_attr(value: int, ty: IntegerType = i64) -> IntegerAttr:
    """``IntegerAttr(value, ty)``, one object per value and type (alignments, orderings,
    small constants repeat on op after op; building one checks the value's range)."""
    return IntegerAttr(value, ty)


@functools.lru_cache(maxsize=64)
def _segments(args: int) -> DenseArrayBase:
    """A call's ``operandSegmentSizes``: its arguments, no operand bundles."""
    return DenseArrayBase.from_list(i32, (args, 0))


@functools.lru_cache(maxsize=1024)
def _symbol(name: str) -> SymbolRefAttr:
    return SymbolRefAttr(name)


def constant(value: Attribute, typ: Attribute) -> llvm.ConstantOp:
    """``llvm.ConstantOp(value, typ)``."""
    return build(llvm.ConstantOp, location=UNKNOWN_LOC, result_types=[typ], properties={"value": value})


def float_arith(cls: type[Operation], lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> Operation:
    """``cls(lhs, rhs)`` for ``llvm.FAddOp``, ``FSubOp``, ``FMulOp``, ``FDivOp``, ``FRemOp``
    (no fast-math flags)."""
    lhs, rhs = _value(lhs), _value(rhs)
    return build(cls, operands=[lhs, rhs], result_types=[lhs.type], properties={"fastmathFlags": NO_FASTMATH},
                      location=UNKNOWN_LOC)


def int_arith(cls: type[Operation], lhs: SSAValue | Operation, rhs: SSAValue | Operation) -> Operation:
    """``cls(lhs, rhs)`` for the integer ops with overflow flags (``llvm.AddOp``, ``SubOp``,
    ``MulOp``, ``ShlOp``; no flags)."""
    lhs, rhs = _value(lhs), _value(rhs)
    return build(cls, operands=[lhs, rhs], result_types=[lhs.type], properties={"overflowFlags": _NO_OVERFLOW},
                      location=UNKNOWN_LOC)


def call(callee: str, args: Sequence[SSAValue | Operation], return_type: Attribute | None = None) -> llvm.CallOp:
    """``llvm.CallOp(callee, *args, return_type=return_type)``: a direct call, no
    operand bundles, C calling convention, no fast-math flags."""
    return build(llvm.CallOp,
        location=UNKNOWN_LOC,
        operands=[_value(a) for a in args],
        result_types=[] if return_type is None else [return_type],
        properties={"callee": _symbol(callee), "fastmathFlags": NO_FASTMATH, "CConv": _CCC,
                    "op_bundle_sizes": _NO_BUNDLES, "operandSegmentSizes": _segments(len(args))},
    )


def init_op(op: Operation, operands: Sequence[SSAValue | Operation] = (),
            result_types: Sequence[Attribute] = (), properties: dict[str, Attribute] | None = None) -> None:
    """What an IRDL op's ``__init__`` with one operand per definition and one result per
    definition does, without IRDL's matching (and as :func:`build` builds): for the
    extended dialects' hot ops (loads, stores, the enzyme accumulator ops), whose shapes
    are fixed."""
    operands = [_value(o) for o in operands]
    defaults = _defaults(type(op))
    if defaults is None:
        Operation.__init__(op, operands=operands, result_types=result_types, properties=properties or {},
                           location=UNKNOWN_LOC)
    else:
        _init(op, defaults, operands, result_types, dict(properties) if properties else None, None, (), UNKNOWN_LOC)


_PTR = llvm.LLVMPointerType()
_NO_ORDERING = IntegerAttr(0, i64)


@functools.lru_cache(maxsize=256)
def _cond_segments(then_args: int, else_args: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, (1, then_args, else_args))


def br(dest: Block, args: Sequence[SSAValue | Operation] = ()) -> llvm.BrOp:
    """``llvm.BrOp(dest, *args)``."""
    return build(llvm.BrOp, location=UNKNOWN_LOC, operands=[_value(a) for a in args], successors=[dest])


def cond_br(cond: SSAValue | Operation, then_block: Block, then_args: Sequence[SSAValue | Operation],
            else_block: Block, else_args: Sequence[SSAValue | Operation]) -> llvm.CondBrOp:
    """``llvm.CondBrOp(cond, then_block, then_args, else_block, else_args)``."""
    operands = [_value(cond), *(_value(a) for a in then_args), *(_value(a) for a in else_args)]
    return build(llvm.CondBrOp, location=UNKNOWN_LOC, operands=operands, successors=[then_block, else_block],
                                properties={"operandSegmentSizes": _cond_segments(len(then_args), len(else_args))})


def select(cls: type[Operation], cond: SSAValue | Operation, lhs: SSAValue | Operation,
           rhs: SSAValue | Operation) -> Operation:
    """``cls(cond, lhs, rhs)`` for ``llvm.SelectOp`` and the extended dialect's."""
    lhs = _value(lhs)
    return build(cls, location=UNKNOWN_LOC, operands=[_value(cond), lhs, _value(rhs)], result_types=[lhs.type])


def alloca(size: SSAValue | Operation, elem_type: Attribute, alignment: int = 32) -> llvm.AllocaOp:
    """``llvm.AllocaOp(size, elem_type, alignment)``."""
    return build(llvm.AllocaOp, location=UNKNOWN_LOC, operands=[_value(size)], result_types=[_PTR],
                                properties={"alignment": int_attr(alignment), "elem_type": elem_type})


def load(ptr: SSAValue | Operation, result_type: Attribute) -> llvm.LoadOp:
    """xDSL's ``llvm.LoadOp(ptr, result_type)`` (no alignment, not atomic)."""
    return build(llvm.LoadOp, location=UNKNOWN_LOC, operands=[_value(ptr)], result_types=[result_type],
                              properties={"ordering": _NO_ORDERING})


def store(value: SSAValue | Operation, ptr: SSAValue | Operation) -> llvm.StoreOp:
    """xDSL's ``llvm.StoreOp(value, ptr)`` (no alignment, not atomic)."""
    return build(llvm.StoreOp, location=UNKNOWN_LOC, operands=[_value(value), _value(ptr)],
                               properties={"ordering": _NO_ORDERING})


_NO_GEP_FLAGS = IntegerAttr(0, 32)


@functools.lru_cache(maxsize=1024)
def raw_indices(indices: tuple[int, ...]) -> DenseArrayBase:
    """A GEP's ``rawConstantIndices`` (i32), shared like :func:`int_attr`'s."""
    return DenseArrayBase.from_list(i32, indices)


def gep(ptr: SSAValue | Operation, indices: Sequence[int], elem_type: Attribute,
        ssa_indices: Sequence[SSAValue | Operation] = ()) -> llvm.GEPOp:
    """``llvm.GEPOp(ptr, indices, elem_type, ssa_indices=ssa_indices)`` (not inbounds; the
    result an opaque pointer)."""
    return build(llvm.GEPOp,
        location=UNKNOWN_LOC,
        operands=[_value(ptr), *(_value(i) for i in ssa_indices)], result_types=[_PTR],
        properties={"rawConstantIndices": raw_indices(tuple(indices)), "elem_type": elem_type,
                    "noWrapFlags": _NO_GEP_FLAGS})


def icmp(cls: type[Operation], lhs: SSAValue, rhs: SSAValue, predicate: IntegerAttr) -> Operation:
    """``cls(lhs, rhs, predicate)`` for ``llvm.ICmpOp`` and the extended dialect's."""
    t = lhs.type
    result = VectorType(i1, t.shape) if isinstance(t, VectorType) else i1
    return build(cls, operands=[lhs, rhs], result_types=[result], properties={"predicate": predicate},
                      location=UNKNOWN_LOC)


def fcmp(lhs: SSAValue, rhs: SSAValue, predicate: IntegerAttr,
         fast_math: llvm.FastMathAttr | None = None) -> Operation:
    """``llvm_ext.FCmpOp(lhs, rhs, predicate, fast_math=fast_math)`` (the extended
    dialect's compare: a vector of i1 for vectors); ``predicate`` as an attribute
    (:func:`fcmp_predicate` of a name)."""
    from zymase.ir import llvm_ext

    t = lhs.type
    result = VectorType(i1, t.get_shape()) if isinstance(t, VectorType) else i1
    return build(llvm_ext.FCmpOp, operands=[lhs, rhs], result_types=[result],
                 properties={"predicate": predicate, "fastmathFlags": fast_math or NO_FASTMATH},
                 location=UNKNOWN_LOC)


@functools.cache
def fcmp_predicate(name: str) -> IntegerAttr:
    """The attribute of an ``fcmp`` predicate named as in the IR (``"oeq"``, ``"uno"``)."""
    return IntegerAttr(llvm.FCmpPredicateFlag(name).to_int(), i64)


def call_intrinsic(name: str, args: Sequence[SSAValue], result_types: Sequence[Attribute]) -> llvm.CallIntrinsicOp:
    """``llvm.CallIntrinsicOp(name, args, result_types)`` (no operand bundles)."""
    return build(llvm.CallIntrinsicOp,
        location=UNKNOWN_LOC,
        operands=list(args), result_types=list(result_types),
        properties={"intrin": _string(name), "op_bundle_sizes": _NO_BUNDLES,
                    "operandSegmentSizes": _segments(len(args))})


@functools.lru_cache(maxsize=1024)
def _string(text: str) -> StringAttr:
    return StringAttr(text)


def append(block: Block, op: Operation) -> None:
    """``block.add_op(op)``. xDSL checks, for every op it attaches, that the op is not an
    ancestor of the block (walking up from the block to the module); an op without
    regions cannot be one. Ops with regions, or already attached, go to xDSL (its
    checks and errors)."""
    if op.regions or op.parent is not None:
        block.add_op(op)
        return
    op.parent = block
    last = block._last_op
    op._prev_op, op._next_op = last, None
    if last is None:
        block._first_op = op
    else:
        last._next_op = op
    block._last_op = op


def insert_before(block: Block, op: Operation, anchor: Operation) -> None:
    """``block.insert_op_before(op, anchor)``, with :func:`append`'s shortcut."""
    if op.regions or op.parent is not None or anchor.parent is not block:
        block.insert_op_before(op, anchor)
        return
    op.parent = block
    before = anchor._prev_op
    op._prev_op, op._next_op = before, anchor
    anchor._prev_op = op
    if before is None:
        block._first_op = op
    else:
        before._next_op = op


def clone(op: Operation, value_mapper: dict[SSAValue, SSAValue] | None = None,
          block_mapper: dict[Block, Block] | None = None, *, with_operands: bool = True) -> Operation:
    """``op.clone(value_mapper, block_mapper)``: the same op, its operands and successors
    mapped, its results entered in ``value_mapper`` and given the same name hints. xDSL's
    clone of an op without regions builds it with no operands, walks the op and its copy
    (generators, for the regions it does not have) and sets the operands a second time,
    copying the properties and attributes twice on the way: about half of what it costs.
    Here the op is built once with its operands mapped: the same uses added in the same
    order (an op never uses its own results, so mapping them first changes nothing). An op
    with regions goes to xDSL's clone. ``with_operands=False``: the copy has no operands yet
    (xDSL's ``clone_operands=False``: nor have the ops in its regions), for a caller that
    sets them once all exist."""
    if op.regions:
        return op.clone(value_mapper, block_mapper, clone_operands=with_operands)
    get = value_mapper.get if value_mapper is not None else None
    successors = op._successors
    if successors and block_mapper:
        successors = [block_mapper.get(s, s) for s in successors]
    operands = op._operands if with_operands else ()
    new = build(type(op), [get(o, o) for o in operands] if get is not None else operands,
                [r.type for r in op.results], dict(op.properties), dict(op.attributes), successors, op.location)
    for old, result in zip(op.results, new.results):
        if value_mapper is not None:
            value_mapper[old] = result
        if old._name is not None:
            result.name_hint = old._name
    return new


def clone_region(region: Region) -> Region:
    """``region.clone()`` of a region whose ops have no regions (a function's body): its
    blocks and their arguments made as xDSL makes them, each op built by :func:`build`
    with no operands, and then, once every value has its copy (a block may use values of
    blocks after it), the operands set in the order of the ops, as xDSL sets them. A
    region with nested regions goes to xDSL's clone."""
    ops = [op for block in region.blocks for op in block.ops]
    if any(op.regions for op in ops):
        return region.clone()
    copy = Region()
    value_mapper: dict[SSAValue, SSAValue] = {}
    block_mapper = {block: Block() for block in region.blocks}
    copy.insert_block(list(block_mapper.values()), 0)
    copies = []
    for block, new_block in block_mapper.items():
        for index, arg in enumerate(block.args):
            new_arg = new_block.insert_arg(arg.type, index, arg.location)
            value_mapper[arg] = new_arg
            new_arg.name_hint = arg.name_hint
        for op in block.ops:
            successors = [block_mapper.get(s, s) for s in op._successors]
            new = build(type(op), (), [r.type for r in op.results], dict(op.properties), dict(op.attributes),
                        successors, op.location)
            for old, result in zip(op.results, new.results):
                value_mapper[old] = result
                if old._name is not None:
                    result.name_hint = old._name
            append(new_block, new)
            copies.append(new)
    for op, new in zip(ops, copies):
        if op._operands:  # (the copy has none yet)
            _set_operands(new, [value_mapper.get(o, o) for o in op._operands])
    return copy
