"""Float bits carried by integers made visible to AD, before it runs: integer loads
that only copy memory become ``llvm.memcpy`` calls, and bitcasts between a float and
an integer of its width fold away where they only round-trip or meet memory.

C code copies the bits of a double through integer memory (``uint64_t`` buffers of
serializers, a union read through its integer member, ``memcpy`` into a ``long`` at
-O0): ``%b = load i64, ptr %p`` whose only uses are ``store i64 %b, ptr %q``. The
engine moves shadow memory along loads and stores of floats only, so such a copy lost
the derivative (issue 23 item 6). As a ``memcpy`` of the same bytes, the engine's
copy rules handle it: type analysis (analysis/types.py) says whether the bytes hold
floats (the shadow bytes move with them), integers (nothing to move), or cannot tell
(a clear error naming the copy). LLVM turns the small memcpys back into loads and
stores after AD.

A union read through its other member at -O0 reaches AD as ``bitcast`` pairs
(``double -> i64 -> double``) once SROA has run; derivatives do not flow through
integers, so ``bitcast(bitcast(x))`` of x's own type becomes ``x``, a store of
``bitcast(x)`` stores ``x``, and ``bitcast(load iN)`` to a float loads the float.
"""

from __future__ import annotations

from zymase.analysis.memory import is_marker
from zymase.autodiff.flavor import _mangle
from zymase.autodiff.type_rules import is_float_vector
from zymase.ir import (Block, BlockArgument, DenseIntOrFPElementsAttr, SSAValue, IntegerAttr, IntegerType, Operation, Region, VectorType, i1, i64,
                       is_float_type, llvm, llvm_ext)
from zymase.analysis.op_classes import is_a

# widths of the integers a float's bits travel in: float, double
_COPY_WIDTHS = (32, 64)


def expose_float_bits(region: Region) -> None:
    """Sign-bit operations made float operations, fold the bitcast round trips, then turn
    integer copies into memcpys."""
    _sign_bit_ops_to_float_ops(region)
    _fold_float_bitcasts(region)
    integer_copies_to_memcpy(region)


def passes_float_bits(callee: Operation) -> bool:
    """Whether ``callee`` takes or returns an integer and reinterprets floats as integers
    or integers as floats (``uint64_t bits(double)``, ``double from_bits(uint64_t)``):
    called, not inlined, the bits cross the call as an integer, which carries no
    derivative, and the sign flip between two such calls lost it (session 34, -O0 and
    ``noinline`` helpers); or that converts integers to floats or floats to integers."""
    signature = callee.function_type
    if not any(isinstance(t, IntegerType) for t in (*signature.inputs.data, signature.output)):
        return False
    # conversions too: ``double tonum(uint64_t b) { return (double)(b & MASK) * 0x1p-52; }``
    # takes a float's mantissa bits and makes a number of them (refused once inlined:
    # autodiff/mantissa_flow), ``int64_t k(double x) { return (int64_t)(a * x + b); }``
    # rounds a float into bits the caller reinterprets (Schraudolph's exp)
    return any(_is_float_int_cast(op) or op.name in _NUMBER_CONVERSIONS for op in callee.walk())


_NUMBER_CONVERSIONS = ("llvm.sitofp", "llvm.uitofp", "llvm.fptosi", "llvm.fptoui")


def _sign_bit_ops_to_float_ops(region: Region) -> None:
    """Integer operations on a float's sign bit, bitcast back to the float's type, become
    the float operations they are, bit for bit: ``and`` with ``0x7ff...f`` is ``fabs``
    (Eigen's SSE ``pabs``, ``_mm_and_pd`` with the mask, which LLVM leaves as an ``and
    <2 x i64>`` of integers loaded from the array), ``xor`` with the sign bit is ``fneg``,
    ``or`` with it is ``-fabs``, and ``(X & 0x7ff...f) | (Y & 0x800...0)`` is
    ``copysign(X, Y)`` (what C code writes on a union or through ``memcpy``, which
    instcombine turns into these float ops at -O1 and up, but -O0 leaves to AD; Enzyme
    differentiates them too). X's bits are rebuilt as floats where they come from (a load
    of integers loads the floats, an insertelement inserts them; what is left is a
    bitcast that the folding below removes where it round-trips), so the derivative
    flows through the float op."""
    for block in region.blocks:
        for op in list(block.ops):
            t = op.results[0].type if is_a(op, llvm.BitcastOp) else None
            if t is None or not (is_float_type(t) or is_float_vector(t)):
                continue
            bitop = op.operands[0].owner
            if not isinstance(bitop, (llvm.AndOp, llvm.XOrOp, llvm.OrOp)):
                continue
            lane = t.element_type if isinstance(t, VectorType) else t
            width = lane.bitwidth
            ints = bitop.results[0].type
            int_lane = ints.element_type if isinstance(ints, VectorType) else ints
            if not isinstance(int_lane, IntegerType) or int_lane.width.data != width:
                continue  # (lanes of another width: the mask is not each float's sign)
            made = _float_op_of(bitop, t, width, op)
            if made is None:
                continue
            op.results[0].replace_all_uses_with(made)
            block.erase_op(op)
            _erase_if_unused(bitop)


def _float_op_of(bitop: Operation, t, width: int, before: Operation):
    """The float value (new ops before ``before``) that integer op ``bitop`` computes on
    the bits of floats of type ``t``, when it only clears, flips or sets their sign bits
    or merges one value's magnitude with another's sign; else None."""
    sign, magnitude = 1 << (width - 1), (1 << (width - 1)) - 1
    block = before.parent_block()

    def call(name: str, *args):
        made = llvm.CallIntrinsicOp(f"llvm.{name}.{_mangle(t)}", list(args), [t])
        made.location = before.location
        block.insert_op_before(made, before)
        return made.results[0]

    def masked_with(v, mask):  # X where v is ``and(X, mask)``
        owner = v.owner if isinstance(v.owner, Operation) else None
        if not isinstance(owner, llvm.AndOp):
            return None
        return next((owner.operands[i] for i in (0, 1) if _is_splat(owner.operands[1 - i], mask)), None)

    if isinstance(bitop, llvm.OrOp):
        for i in (0, 1):
            x, y = masked_with(bitop.operands[i], magnitude), masked_with(bitop.operands[1 - i], sign)
            if x is not None and y is not None:
                return call("copysign", _as_float(x, t, before), _as_float(y, t, before))
    constant = {llvm.AndOp: magnitude, llvm.XOrOp: sign, llvm.OrOp: sign}[type(bitop)]
    keep = next((i for i in (0, 1) if _is_splat(bitop.operands[1 - i], constant)), None)
    if keep is None:
        return None
    x = _as_float(bitop.operands[keep], t, before)
    if isinstance(bitop, llvm.XOrOp):
        neg = llvm.FNegOp(x)
        block.insert_op_before(neg, before)
        return neg.results[0]
    absolute = call("fabs", x)
    if isinstance(bitop, llvm.AndOp):
        return absolute
    neg = llvm.FNegOp(absolute)  # or with the sign bit: -|x|
    block.insert_op_before(neg, before)
    return neg.results[0]


def _erase_if_unused(op: Operation) -> None:
    """Erase ``op`` and then its operands' defining and/or ops that are left unused."""
    if op.results[0].uses or op.parent_block() is None:
        return
    operands = [o.owner for o in op.operands if isinstance(o.owner, llvm.AndOp)]
    op.parent_block().erase_op(op)
    for inner in operands:
        if inner.parent_block() is not None:
            _erase_if_unused(inner)


def _is_splat(v, value: int) -> bool:
    """Whether ``v`` is the integer constant ``value`` (in every lane), read as unsigned
    at its own width (an i32 sign bit is stored as -2147483648)."""
    owner = getattr(v, "owner", None)
    if not isinstance(owner, llvm.ConstantOp):
        return False
    t = v.type.element_type if isinstance(v.type, VectorType) else v.type
    if not isinstance(t, IntegerType):
        return False
    bits = (1 << t.width.data) - 1
    attr = owner.value
    if isinstance(attr, IntegerAttr):
        return attr.value.data & bits == value
    if isinstance(attr, DenseIntOrFPElementsAttr):
        return all(int(x) & bits == value for x in attr.get_values())
    return False


def _as_float(x, t, before: Operation):
    """The bits of integer ``x`` as a value of float type ``t``, built from where they
    come from (a float bitcast to integers, a load, insertelements), new ops before
    ``before``."""
    block = before.parent_block()
    incoming = _single_incoming(x)
    if incoming is not None:  # the value an inlined helper returned (transforms/inline.py)
        return _as_float(incoming, t, before)
    owner = x.owner if isinstance(x.owner, Operation) else None
    if isinstance(owner, llvm.BitcastOp) and owner.operands[0].type == t:
        return owner.operands[0]
    if isinstance(owner, llvm.LoadOp) and isinstance(t, VectorType) and _is_plain_load(owner):
        typed = llvm_ext.LoadOp(owner.ptr, t, alignment=_alignment(owner))
        typed.location = owner.location
        _copy_metadata(owner, typed)
        owner.parent_block().insert_op_before(typed, owner)
        return typed.results[0]
    if isinstance(owner, llvm.InsertElementOp) and isinstance(t, VectorType):
        vector = _as_float(owner.operands[0], t, before)
        element = _as_float(owner.operands[1], t.element_type, before)
        insert = llvm.InsertElementOp(vector, element, owner.operands[2])
        block.insert_op_before(insert, before)
        return insert.results[0]
    if owner is not None and owner.name in ("llvm.mlir.poison", "llvm.mlir.undef"):
        undef = llvm.UndefOp(t)
        block.insert_op_before(undef, before)
        return undef.results[0]
    cast = llvm.BitcastOp(x, t)  # (a scalar load or round trip: folded below)
    block.insert_op_before(cast, before)
    return cast.results[0]


def _single_incoming(x) -> SSAValue | None:
    """For a block argument of a block with one predecessor (the continuation of an
    inlined call, receiving its result): the value that predecessor passes."""
    if not isinstance(x, BlockArgument):
        return None
    predecessors = list(x.block.predecessors())
    if len(predecessors) != 1:
        return None
    term = predecessors[0].last_op
    if not isinstance(term, llvm.BrOp):
        return None
    return term.arguments[x.index]


def _is_float_int_cast(op: Operation) -> bool:
    if not is_a(op, llvm.BitcastOp):
        return False
    a, b = op.operands[0].type, op.results[0].type
    return (is_float_type(a) and isinstance(b, IntegerType)) or (is_float_type(b) and isinstance(a, IntegerType))


def _fold_float_bitcasts(region: Region) -> None:
    for block in region.blocks:
        for op in list(block.ops):
            if not _is_float_int_cast(op):
                continue
            src = op.operands[0]
            inner = src.owner if isinstance(src.owner, Operation) else None
            if inner is not None and _is_float_int_cast(inner) and inner.operands[0].type == op.results[0].type:
                op.results[0].replace_all_uses_with(inner.operands[0])  # a round trip
                block.erase_op(op)
                continue
            if isinstance(src.type, IntegerType):
                load = inner
                if isinstance(load, llvm.LoadOp) and _is_plain_integer_load(load):
                    # the float loaded as a float, at the same point; an integer load
                    # that is also used as an integer (a sign test on the bits read
                    # with memcpy) stays for those uses
                    typed = llvm_ext.LoadOp(load.ptr, op.results[0].type,
                                            alignment=_alignment(load))
                    typed.location = load.location
                    _copy_metadata(load, typed)
                    load.parent_block().insert_op_before(typed, load)
                    op.results[0].replace_all_uses_with(typed.results[0])
                    block.erase_op(op)
                    if not src.uses:
                        load.parent_block().erase_op(load)
                continue
            for use in list(op.results[0].uses):
                store = use.operation
                if isinstance(store, llvm.StoreOp) and use.index == 0:
                    store.operands = [src, *store.operands[1:]]  # the same bits, stored as the float
            if not op.results[0].uses:
                block.erase_op(op)


def _alignment(op: Operation) -> int | None:
    a = op.properties.get("alignment")
    return a.value.data if isinstance(a, IntegerAttr) else None


def _copy_metadata(old: Operation, new: Operation) -> None:
    """Alias scopes and the like stay with the access; TBAA (an integer access type)
    does not describe the float access."""
    for name, attr in old.attributes.items():
        if "tbaa" not in name:
            new.attributes[name] = attr


def integer_copies_to_memcpy(region: Region) -> int:
    """Rewrite every integer copy of ``region`` (see the module docstring); returns how
    many stores became memcpys."""
    count = 0
    for block in region.blocks:
        for load in [op for op in block.ops if _is_plain_integer_load(op)]:
            stores = _copying_stores(load, block)
            if stores is None:
                continue
            for store in stores:
                size = llvm.ConstantOp(IntegerAttr(load.results[0].type.width.data // 8, i64), i64)
                no = llvm.ConstantOp(IntegerAttr(0, i1), i1)
                copy = llvm.CallIntrinsicOp("llvm.memcpy.p0.p0.i64", [store.ptr, load.ptr, size.results[0],
                                                                     no.results[0]], [])
                copy.location = store.location
                block.insert_ops_before([size, no, copy], store)
                block.erase_op(store)
                count += 1
            block.erase_op(load)
    return count


def _is_plain_integer_load(op: Operation) -> bool:
    t = op.results[0].type if is_a(op, llvm.LoadOp) else None
    return (
        is_a(t, IntegerType) and t.width.data in _COPY_WIDTHS
        and getattr(op, "volatile_", None) is None and _ordering(op) == 0
    )


def _is_plain_load(op: Operation) -> bool:
    return getattr(op, "volatile_", None) is None and _ordering(op) == 0


def _ordering(op: Operation) -> int:
    ordering = op.properties.get("ordering")
    return ordering.value.data if isinstance(ordering, IntegerAttr) else 0


def _copying_stores(load: Operation, block: Block) -> list[Operation] | None:
    """The stores of ``load``'s value, when the value has no other use and every store
    comes later in the same block with nothing between that may write memory (the
    memcpy reads the source at the store, not at the load)."""
    value = load.results[0]
    stores = []
    for use in value.uses:
        op = use.operation
        if not (isinstance(op, llvm.StoreOp) and use.index == 0 and op.parent_block() is block):
            return None
        if op.ptr is load.ptr or getattr(op, "volatile_", None) is not None or _ordering(op) != 0:
            return None
        stores.append(op)
    if not stores:
        return None
    pending = set(stores)
    op = load.next_op
    while op is not None and pending:
        if op in pending:
            pending.discard(op)
        elif _may_write_memory(op):
            return None
        op = op.next_op
    return None if pending else stores


def _may_write_memory(op: Operation) -> bool:
    if isinstance(op, llvm.LoadOp):
        return getattr(op, "volatile_", None) is not None or _ordering(op) != 0
    if isinstance(op, (llvm.StoreOp, llvm.CallOp)):
        return True
    if isinstance(op, llvm.CallIntrinsicOp):
        return not is_marker(op)
    return bool(op.regions) or op.name.startswith(("llvm.atomic", "llvm.cmpxchg", "llvm.fence", "llvm.inline_asm"))
