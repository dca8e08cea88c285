"""Lowering of ``memref`` ops to the ``llvm`` dialect (part of ``lower-to-llvm``).

A ranked memref value becomes MLIR's standard descriptor, an llvm struct

    { ptr allocated, ptr aligned, i64 offset, [rank x i64] sizes, [rank x i64] strides }

(rank 0: the first three fields only). Element ``(i0, .., ik)`` lives at
``aligned + offset + sum(i_j * stride_j)`` elements. Static offsets and strides of
the memref type are used as constants, so LLVM sees the same address arithmetic
it would for hand-written C; dynamic ones are read from the descriptor.

The lowering functions register themselves in
:data:`zymase.transforms.lowering_registry.LOWERINGS`; :func:`descriptor_type` is the
type conversion. ``memref.copy`` and ``linalg.generic`` are turned into loops
before (:mod:`zymase.transforms.lower_structured`).

A ``memref.alloc``/``memref.alloca`` carrying the unit attribute
``zymase.zero_init`` (shadow allocations made by differentiation) gets zeroed
memory: ``calloc`` instead of ``malloc``, a memset after the ``alloca``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from zymase.ir import (
    DYNAMIC_INDEX,
    Attribute,
    DenseArrayBase,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    Operation,
    SSAValue,
    StridedLayoutAttr,
    i1,
    i8,
    i64,
    llvm,
    memref,
)
from zymase.ir import memref_ext
from zymase.transforms.lowering_registry import PTR, Emitter, llvm_op, lowers

__all__ = ["descriptor_type", "prepare_memref_lowering", "ZERO_INIT", "static_strides_and_offset"]

ZERO_INIT = "zymase.zero_init"
"""Unit attribute on memref.alloc/alloca: the memory starts zeroed."""

_Load = llvm_op("llvm.load")
_Store = llvm_op("llvm.store")
_ICmp = llvm_op("llvm.icmp")
_Select = llvm_op("llvm.select")


def descriptor_type(t: MemRefType) -> Attribute:
    """The llvm struct a memref of type ``t`` is lowered to."""
    rank = t.get_num_dims()
    fields: list[Attribute] = [PTR, PTR, i64]
    if rank:
        fields += [llvm.LLVMArrayType(rank, i64)] * 2
    return llvm.LLVMStructType.from_type_list(fields)


def static_strides_and_offset(t: MemRefType) -> tuple[list[int | None], int | None]:
    """Strides and offset of ``t`` when known from the type (None where dynamic).

    The identity layout is row-major and contiguous: strides are products of the
    trailing sizes (unknown past a dynamic size), offset 0.
    """
    shape = t.get_shape()
    layout = t.layout
    if isinstance(layout, StridedLayoutAttr):
        strides = [None if isinstance(s, NoneAttr) else s.data for s in layout.strides.data]
        offset = None if isinstance(layout.offset, NoneAttr) else layout.offset.data
        return strides, offset
    if not isinstance(layout, NoneAttr):
        return [None] * len(shape), None  # an affine map layout: read the descriptor
    strides: list[int | None] = []
    running: int | None = 1
    for size in reversed(shape):
        strides.append(running)
        running = None if running is None or size == DYNAMIC_INDEX else running * size
    return list(reversed(strides)), 0


# ----------------------------------------------------------------------------- descriptor


def _pos(*indices: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(indices))


class _Descriptor:
    """Read and build descriptors of one memref type."""

    def __init__(self, e: Emitter, t: MemRefType, value: SSAValue | None = None):
        self.e = e
        self.t = t
        self.rank = t.get_num_dims()
        self.struct = descriptor_type(t)
        self.value = value

    def field(self, *pos: int, typ: Attribute = i64) -> SSAValue:
        assert self.value is not None
        return self.e.value(llvm.ExtractValueOp(_pos(*pos), self.value, typ))

    def aligned(self) -> SSAValue:
        return self.field(1, typ=PTR)

    def allocated(self) -> SSAValue:
        return self.field(0, typ=PTR)

    def size(self, i: int) -> SSAValue:
        static = self.t.get_shape()[i]
        return self.e.const(i64, static) if static != DYNAMIC_INDEX else self.field(3, i)

    def stride(self, i: int) -> SSAValue:
        static = static_strides_and_offset(self.t)[0][i]
        return self.e.const(i64, static) if static is not None else self.field(4, i)

    def offset(self) -> SSAValue:
        static = static_strides_and_offset(self.t)[1]
        return self.e.const(i64, static) if static is not None else self.field(2)

    def build(self, allocated, aligned, offset, sizes: Sequence[SSAValue], strides: Sequence[SSAValue]) -> SSAValue:
        e = self.e
        d = e.value(llvm.UndefOp(self.struct))
        d = e.value(llvm.InsertValueOp(_pos(0), d, allocated))
        d = e.value(llvm.InsertValueOp(_pos(1), d, aligned))
        d = e.value(llvm.InsertValueOp(_pos(2), d, offset))
        for i, (size, stride) in enumerate(zip(sizes, strides)):
            d = e.value(llvm.InsertValueOp(_pos(3, i), d, size))
            d = e.value(llvm.InsertValueOp(_pos(4, i), d, stride))
        return d

    def address(self, indices: Sequence[SSAValue]) -> SSAValue:
        """Pointer to element ``indices``."""
        e = self.e
        linear = self.offset()
        for i, idx in enumerate(indices):
            linear = e.value(llvm.AddOp(linear, e.value(llvm.MulOp(idx, self.stride(i)))))
        elem = e.type(self.t.get_element_type())
        return e.value(llvm.GEPOp(self.aligned(), [llvm.GEP_USE_SSA_VAL], elem, ssa_indices=[linear]))


def _memref_type(v: SSAValue, e: Emitter) -> MemRefType:
    t = v.type
    if not isinstance(t, MemRefType):
        raise e.error(f"unranked memrefs ({t}) cannot be lowered", hint="use ranked memref types")
    return t


def _original_type(op: Operation, e: Emitter, index: int = 0) -> MemRefType:
    """The memref type of the op's ``index``-th memref operand. Operands are already
    lowered to descriptor structs when their user is lowered, so the types were
    recorded beforehand (:func:`prepare_memref_lowering`)."""
    types = _OPERAND_TYPES.get(op)
    if types is None or index >= len(types):
        raise e.error("memref operand of unknown type", hint="this is a zymase bug; please report it")
    return types[index]


_OPERAND_TYPES: "weakref.WeakKeyDictionary[Operation, list[MemRefType]]" = weakref.WeakKeyDictionary()


def prepare_memref_lowering(module: Operation) -> None:
    """Before lower-to-llvm: structured ops become loops and branches, and every
    memref op's operand types are recorded (the lowering retypes operands first)."""
    from zymase.transforms.lower_structured import lower_structured

    if all(op.dialect_name() in ("llvm", "builtin") for op in module.walk()):
        # an llvm-dialect module (zymase cc, Numba) has nothing to lower: one walk instead
        # of three (any other dialect may hold something lower_structured rewrites: affine
        # loads, complex values, llvm.intr ops are not memref/scf ops)
        return
    lower_structured(module)
    for op in module.walk():
        if op.dialect_name() == "memref":
            _OPERAND_TYPES[op] = [o.type for o in op.operands if isinstance(o.type, MemRefType)]


# ----------------------------------------------------------------------------- ops


@lowers(memref.LoadOp)
def _lower_load(op: memref.LoadOp, e: Emitter) -> Sequence[SSAValue]:
    d = _Descriptor(e, _original_type(op, e), op.memref)
    return [e.value(_Load(d.address(list(op.indices)), e.type(op.res.type)))]


@lowers(memref.StoreOp)
def _lower_store(op: memref.StoreOp, e: Emitter) -> Sequence[SSAValue]:
    d = _Descriptor(e, _original_type(op, e), op.memref)
    e.emit(_Store(op.value, d.address(list(op.indices))))
    return []


def _contiguous_sizes_strides(e: Emitter, t: MemRefType, dynamic: Sequence[SSAValue]):
    """Sizes (static from the type, dynamic from operands) and row-major strides."""
    dyn = iter(dynamic)
    sizes = [e.const(i64, s) if s != DYNAMIC_INDEX else next(dyn) for s in t.get_shape()]
    strides: list[SSAValue] = []
    running = e.const(i64, 1)
    for size in reversed(sizes):
        strides.append(running)
        running = e.value(llvm.MulOp(running, size))
    return sizes, list(reversed(strides)), running  # running = element count


def _elem_bytes(e: Emitter, t: MemRefType) -> SSAValue:
    return e.size_of(e.type(t.get_element_type()))


@lowers(memref.AllocOp)
def _lower_alloc(op: memref.AllocOp, e: Emitter) -> Sequence[SSAValue]:
    """malloc (calloc when zero-initialized), over-allocating to honour an alignment
    above malloc's 16 bytes; the aligned pointer is rounded up."""
    t = _memref_type(op.memref, e)
    sizes, strides, count = _contiguous_sizes_strides(e, t, list(op.dynamic_sizes))
    nbytes = e.value(llvm.MulOp(count, _elem_bytes(e, t)))
    align = op.alignment.value.data if op.alignment is not None else 16
    if align > 16:
        nbytes = e.value(llvm.AddOp(nbytes, e.const(i64, align)))
    if ZERO_INIT in op.attributes:
        e.fn.module.declare("calloc", [i64, i64], PTR, e)
        allocated = e.call("calloc", [nbytes, e.const(i64, 1)], PTR).results[0]
    else:
        e.fn.module.declare("malloc", [i64], PTR, e)
        allocated = e.call("malloc", [nbytes], PTR).results[0]
    aligned = allocated
    if align > 16:
        address = e.value(llvm.PtrToIntOp(allocated, i64))
        bumped = e.value(llvm.AddOp(address, e.const(i64, align - 1)))
        rounded = e.value(llvm.AndOp(bumped, e.const(i64, -align)))
        aligned = e.value(llvm.IntToPtrOp(rounded))
    d = _Descriptor(e, t)
    return [d.build(allocated, aligned, e.const(i64, 0), sizes, strides)]


@lowers(memref.AllocaOp)
def _lower_alloca(op: memref.AllocaOp, e: Emitter) -> Sequence[SSAValue]:
    t = _memref_type(op.memref, e)
    sizes, strides, count = _contiguous_sizes_strides(e, t, list(op.dynamic_sizes))
    elem = e.type(t.get_element_type())
    align = op.alignment.value.data if op.alignment is not None else 16
    ptr = e.value(llvm.AllocaOp(count, elem, alignment=align))
    if ZERO_INIT in op.attributes:
        nbytes = e.value(llvm.MulOp(count, _elem_bytes(e, t)))
        zero, no = e.const(i8, 0), e.const(i1, 0)
        e.emit(llvm.CallIntrinsicOp("llvm.memset.p0.i64", [ptr, zero, nbytes, no], []))
    return [_Descriptor(e, t).build(ptr, ptr, e.const(i64, 0), sizes, strides)]


@lowers(memref.DeallocOp)
def _lower_dealloc(op: memref.DeallocOp, e: Emitter) -> Sequence[SSAValue]:
    d = _Descriptor(e, _original_type(op, e), op.memref)
    e.fn.module.declare("free", [PTR], None, e)
    e.call("free", [d.allocated()], None)
    return []


@lowers(memref.DimOp)
def _lower_dim(op: memref.DimOp, e: Emitter) -> Sequence[SSAValue]:
    """A constant index reads one size; a variable one selects among all of them."""
    d = _Descriptor(e, _original_type(op, e), op.source)
    owner = op.index.owner
    value = getattr(owner, "value", None)
    if isinstance(owner, llvm.ConstantOp) and isinstance(value, IntegerAttr):
        return [d.size(value.value.data)]
    result = e.const(i64, 0)
    for i in range(d.rank):
        hit = e.value(_ICmp(op.index, e.const(i64, i), IntegerAttr(0, i64)))  # eq
        result = e.value(_Select(hit, d.size(i), result))
    return [result]


@lowers(memref_ext.CastOp)
def _lower_cast(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """Ranked-to-ranked casts keep the descriptor (it depends only on the rank)."""
    _memref_type(op.results[0], e)
    return [op.operands[0]]


@lowers(memref.SubviewOp)
def _lower_subview(op: memref.SubviewOp, e: Emitter) -> Sequence[SSAValue]:
    """Same buffer; offset += sum(offset_i * stride_i), strides *= step_i; unit
    dimensions that the result type drops are left out (rank-reducing subviews)."""
    src = _Descriptor(e, _original_type(op, e), op.source)
    result_t = _memref_type(op.result, e)

    def values(static: DenseArrayBase, dynamic) -> list[SSAValue]:
        dyn = iter(dynamic)
        return [e.const(i64, s) if s != DYNAMIC_INDEX else next(dyn) for s in static.get_values()]

    offsets = values(op.static_offsets, op.offsets)
    sizes = values(op.static_sizes, op.sizes)
    steps = values(op.static_strides, op.strides)
    offset = src.offset()
    strides = []
    for i in range(src.rank):
        stride = src.stride(i)
        offset = e.value(llvm.AddOp(offset, e.value(llvm.MulOp(offsets[i], stride))))
        strides.append(e.value(llvm.MulOp(stride, steps[i])))
    keep = list(range(src.rank))
    dropped = src.rank - result_t.get_num_dims()
    static_sizes = op.static_sizes.get_values()
    for i in range(src.rank):
        if dropped and static_sizes[i] == 1:
            keep.remove(i)
            dropped -= 1
    if dropped:
        raise e.error("cannot tell which dimensions this rank-reducing subview drops",
                      hint="drop only dimensions of static size 1")
    out = _Descriptor(e, result_t)
    return [out.build(src.allocated(), src.aligned(), offset, [sizes[i] for i in keep], [strides[i] for i in keep])]
