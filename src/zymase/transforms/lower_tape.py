"""Lowering of enzyme's accumulator and tape ops (``enzyme.init/get/set/push/pop``,
the indexed caches) to ``llvm``, and the tape runtime the lowered code calls.

The memory layouts of ``!enzyme.Gradient<T>``, ``!enzyme.Cache<T>`` and
``!enzyme.IndexedCache<T>`` are defined here (split mode and OpenMP rely on
:data:`CACHE_STRUCT` and :data:`GLOBAL_TAPE`); :mod:`zymase.transforms.lower_to_llvm`
adds the runtime functions a module calls (:func:`cache_runtime_closure`) and frees the
caches on return.
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.transforms.tape_pool import (CACHE_GROW, HEAP_TAPE, HEAP_TAPE_RUNTIME, TAPE_FREE, TAPE_OUT_OF_MEMORY,
                                        TAPE_OUT_OF_MEMORY_GLOBAL, TAPE_OUT_OF_MEMORY_MESSAGE)
from zymase.ir import (StringAttr, Attribute, IntegerAttr, DenseArrayBase, IntegerType, OpResult, fast_ops,
                       Operation, SSAValue, enzyme, i64, llvm, llvm_ext)
from zymase.transforms.lowering_registry import (PTR, Emitter, ExtLoadOp, ExtStoreOp, alloc_size, llvm_op,
                                                 lower_type, lowers)

CACHE_INLINE_BYTES = 128
CACHE_STRUCT = llvm.LLVMStructType.from_type_list(
    [PTR, i64, i64, llvm.LLVMArrayType(CACHE_INLINE_BYTES, IntegerType(8))]
)
"""Memory layout of an ``!enzyme.Cache<T>``: ``{ptr data, i64 size, i64 capacity,
[128 x i8] inline}`` with ``size``/``capacity`` in bytes (so one push/pop pair
serves every T). The first 128 bytes live in the cache itself, on the stack: a
short loop or a branch decision never calls malloc; longer ones move to the heap."""

HEAP_CACHE_STRUCT = llvm.LLVMStructType.from_type_list([PTR, i64, i64])
"""Memory layout of an ``!enzyme.Cache<T>`` of a derivative that is differentiated again
(``autodiff/semantics.differentiated_again``): ``{ptr data, i64 capacity, i64 count}``,
capacity in bytes, count in elements. Its first two fields are an indexed cache's handle,
so it grows by the same ``__zymase_cache_grow`` (realloc to the engine), and its slots are
``getelementptr T, data, k``: the engine differentiating the derivative sees what the
buffer holds and moves the adjoints with it when it moves. The byte-generic push (an
inline buffer copied to the heap by a memcpy of unknown type, bytes at run-time offsets)
left them behind: reverse-over-reverse Hessians of loops taping more than 128 bytes were
silently wrong."""

CACHE_PUSH = "__zymase_cache_push"
GLOBAL_TAPE = "__zymase_tape"
CACHE_POP = "__zymase_cache_pop"


def _elem_type(t: Attribute) -> Attribute:
    """Lowered element type of a ``!enzyme.Gradient<T>`` / ``!enzyme.Cache<T>``."""
    return lower_type(t.elem)  # type: ignore[attr-defined]


@lowers(enzyme.InitOp)
def _lower_init(op: enzyme.InitOp, e: Emitter) -> Sequence[SSAValue]:
    """Accumulators and caches live in entry-block allocas.

    * ``!enzyme.Gradient<T>``: an alloca of T; the init stores zero *at its own
      position*, so re-executing it (e.g. in a loop) resets the accumulator.
    * ``!enzyme.Cache<T>``: an alloca of :data:`CACHE_STRUCT` whose data pointer
      and capacity are zeroed in the entry block (so the buffer is null until the
      first push and ``free`` before each return is always valid). The init itself
      resets ``size`` to 0, keeping the buffer for reuse if it runs again.
    """
    typ = op.result.type
    if isinstance(typ, enzyme.IndexedCacheType):
        return [_lower_indexed_init(op, e)]
    if isinstance(typ, enzyme.GradientType):
        elem = _elem_type(typ)
        slot = e.fn.entry_alloca(elem)
        e.emit(ExtStoreOp(e.zero(elem), slot))
        return [slot]
    tape = op.attributes.get("zymase.tape")
    if tape is not None and tape.data == "global":
        # The thread's global tape, shared by augmented and reverse functions
        # (split mode): never reset, never freed by a function.
        e.fn.module.require_global_tape(e)
        return [e.value(address_of(GLOBAL_TAPE))]
    from zymase.autodiff.semantics import differentiated_again

    if differentiated_again():
        slot = e.fn.entry_alloca(HEAP_CACHE_STRUCT, zero_fields=(0, 1))
        e.fn.heap_caches.add(slot)
        count_ptr = e.value(fast_ops.gep(slot, [0, 2], HEAP_CACHE_STRUCT))
        e.emit(ExtStoreOp(e.const(i64, 0), count_ptr))
        return [slot]
    # The data pointer null and the capacity 0 until the first push; the inline
    # buffer is scratch (every byte popped was pushed first), so it is not zeroed.
    slot = e.fn.entry_alloca(CACHE_STRUCT, zero_fields=(0, 2))
    e.fn.caches.append(slot)
    size_ptr = e.value(fast_ops.gep(slot, [0, 1], CACHE_STRUCT))
    e.emit(ExtStoreOp(e.const(i64, 0), size_ptr))
    return [slot]


@lowers(enzyme.IgnoreDerivativesOp)
def _lower_ignore_derivatives(op: enzyme.IgnoreDerivativesOp, e: Emitter) -> Sequence[SSAValue]:
    return [op.input]  # only AD looks through it


@lowers(enzyme.GetOp)
def _lower_get(op: enzyme.GetOp, e: Emitter) -> Sequence[SSAValue]:
    return [e.value(ExtLoadOp(op.gradient, e.type(op.result.type)))]


@lowers(enzyme.SetOp)
def _lower_set(op: enzyme.SetOp, e: Emitter) -> Sequence[SSAValue]:
    e.emit(ExtStoreOp(op.value, op.gradient))
    return []


@lowers(enzyme.PushOp)
def _lower_push(op: enzyme.PushOp, e: Emitter) -> Sequence[SSAValue]:
    """The runtime helper returns the slot for ``sizeof(T)`` new bytes; store there."""
    if op.cache in e.fn.heap_caches:
        _push_typed(op, e)
        return []
    e.fn.module.require_cache_runtime(e, CACHE_PUSH)
    t = e.type(op.value.type)
    nbytes = e.size_of(t)
    slot = e.call(CACHE_PUSH, [op.cache, nbytes], PTR).results[0]
    e.emit(ExtStoreOp(op.value, slot, alignment=_lifo_slot_alignment(t)))
    return []


def _lifo_slot_alignment(t) -> int | None:
    """The alignment a LIFO cache's slot of type ``t`` is known to have, where the type's
    own is more: the slots follow each other in the byte buffer (the first 128 bytes
    inline in the 8-aligned cache struct), so a 16-byte vector's slot is 8-aligned only,
    and a load or store taking the vector's own 16 was an aligned SSE move that faulted
    (vectorized IR given to ``zymase opt``, session 32). None: the type's own (8 or less)."""
    from zymase.ir import Float80Type

    natural = 16 if isinstance(t, Float80Type) else alloc_size(t)
    return 8 if natural is not None and natural > 8 else None


@lowers(enzyme.PopOp)
def _lower_pop(op: enzyme.PopOp, e: Emitter) -> Sequence[SSAValue]:
    """The runtime helper drops ``sizeof(T)`` bytes and returns their address."""
    t = e.type(op.result.type)
    if op.cache in e.fn.heap_caches:
        count_ptr = e.value(fast_ops.gep(op.cache, [0, 2], HEAP_CACHE_STRUCT))
        rest = e.value(llvm.SubOp(e.value(ExtLoadOp(count_ptr, i64)), e.const(i64, 1)))
        e.emit(ExtStoreOp(rest, count_ptr))
        slot = e.value(fast_ops.gep(e.value(ExtLoadOp(op.cache, PTR)), [llvm.GEP_USE_SSA_VAL], t, [rest]))
        return [e.value(ExtLoadOp(slot, t))]
    e.fn.module.require_cache_runtime(e, CACHE_POP)
    nbytes = e.size_of(t)
    slot = e.call(CACHE_POP, [op.cache, nbytes], PTR).results[0]
    return [e.value(ExtLoadOp(slot, t, alignment=_lifo_slot_alignment(t)))]


def _push_typed(op: enzyme.PushOp, e: Emitter) -> None:
    """A push onto a :data:`HEAP_CACHE_STRUCT` cache: grow to ``(count + 1) * sizeof(T)``
    bytes, store at element ``count``."""
    e.fn.module.require_cache_runtime(e, CACHE_GROW, TAPE_FREE)
    t = e.type(op.value.type)
    count_ptr = e.value(fast_ops.gep(op.cache, [0, 2], HEAP_CACHE_STRUCT))
    count = e.value(ExtLoadOp(count_ptr, i64))
    following = e.value(llvm.AddOp(count, e.const(i64, 1)))
    e.call(CACHE_GROW, [op.cache, e.value(llvm.MulOp(following, e.size_of(t)))], None)
    slot = e.value(fast_ops.gep(e.value(ExtLoadOp(op.cache, PTR)), [llvm.GEP_USE_SSA_VAL], t, [count]))
    e.emit(ExtStoreOp(op.value, slot))
    e.emit(ExtStoreOp(following, count_ptr))


INDEXED_CACHE_STRUCT = llvm.LLVMStructType.from_type_list([PTR, i64])
"""Memory layout of an ``!enzyme.IndexedCache<T>``: ``{ptr data, i64 capacity}``
(capacity in bytes), an entry-block alloca whose address never escapes, so that
LLVM's SROA turns both fields into SSA values (the data pointer is then a plain
register in the loops that read and write the cache)."""

CACHE_RESERVE = "__zymase_cache_reserve"
CACHE_REGROW = "__zymase_cache_regrow"  # a reserve's growth (see the runtime text's comment)
# Indexed-cache buffers outlive the call: each cache of the module (each site) has a
# spare buffer in a global {i64 lock, ptr block, i64 capacity}, where the function
# leaves its buffer on return and takes it back on the next call. A gradient called
# again (an optimizer loop) then reuses its tape instead of mapping and faulting in
# fresh pages, which for tapes of many MB costs as much as the reverse sweep itself;
# one spare per site (rather than a shared pool) means every cache gets back the
# buffer that already has its size, so no call regrows one. The lock is taken with an
# atomic exchange (no thread-local storage: MCJIT cannot allocate it); a recursive or
# concurrent call finds it taken or empty and allocates its own buffer.
TAPE_SITE = "__zymase_tape_site"
TAPE_BUFFER = "zymase.tape_buffer"  # the attribute zymase.transforms.alias_scopes reads
POOL_TAKE = "__zymase_tape_take"
POOL_GIVE = "__zymase_tape_give"
SITE_STRUCT = llvm.LLVMStructType.from_type_list([i64, PTR, i64])


def _lower_indexed_init(op: enzyme.InitOp, e: Emitter) -> SSAValue:
    """The handle; its site is a spare-buffer global, or for a ``"heap"`` cache (a
    derivative that is differentiated again: its tape must be memory the engine
    shadows) a name for alias scopes only, the buffer growing by realloc and freed
    on return."""
    handle = e.fn.entry_alloca(INDEXED_CACHE_STRUCT, zero_init=True)
    tape = op.attributes.get("zymase.tape")
    if tape is not None and tape.data == "heap":
        site = e.fn.module.new_heap_tape_name()
    else:
        site = e.fn.module.new_tape_site()
    e.fn.indexed_caches[handle] = (e.type(op.result.type.elem), site)  # type: ignore[attr-defined]
    return handle


@lowers(enzyme.CacheReserveOp)
def _lower_cache_reserve(op: enzyme.CacheReserveOp, e: Emitter) -> Sequence[SSAValue]:
    """Grow the data to ``count * sizeof(T)`` bytes if it is smaller (the runtime
    helper takes and returns the fields by value; the handle stays promotable)."""
    count = op.count
    if count.type != i64:
        count = e.value(llvm.SExtOp(count, i64))
    elem, site = e.fn.indexed_caches[op.cache]
    # (the buffer is given back on return: lower_to_llvm._free_caches_before_returns)
    if site.startswith(HEAP_TAPE):
        e.fn.module.require_cache_runtime(e, CACHE_GROW, TAPE_FREE)
    else:
        e.fn.module.require_cache_runtime(e, CACHE_RESERVE, POOL_GIVE)
    nbytes = _reserve_bytes(count, e.size_of(e.type(elem)), e)
    if site.startswith(HEAP_TAPE):
        e.call(CACHE_GROW, [op.cache, nbytes], None)
        return []
    cap_ptr = e.value(fast_ops.gep(op.cache, [0, 1], INDEXED_CACHE_STRUCT))
    data = e.value(ExtLoadOp(op.cache, PTR))
    cap = e.value(ExtLoadOp(cap_ptr, i64))
    site_ptr = e.value(address_of(site))
    grown = e.call(CACHE_RESERVE, [site_ptr, data, cap, nbytes], INDEXED_CACHE_STRUCT).results[0]
    e.emit(ExtStoreOp(e.value(_extract_field(grown, 0, PTR)), op.cache))
    e.emit(ExtStoreOp(e.value(_extract_field(grown, 1, i64)), cap_ptr))
    return []


# The ops of the tape lowering are built as xDSL's constructors build them, without their
# generic argument matching (as zymase.ir.fast_ops does for AD's ops): an IRDL
# constructor costs 5-6 times Operation.create, and every indexed cache's reserve, every
# tape slot and every cache freed on return built several (tests/python/test_lowering_ops.py
# compares them with the constructors' ops).

from zymase.ir import SymbolRefAttr, UnitAttr  # noqa: E402  (only these builders use them)

#: extractvalue positions 0 and 1 (attributes are immutable: shared)
_FIELDS = (DenseArrayBase.from_list(i64, [0]), DenseArrayBase.from_list(i64, [1]))
#: ``icmp ugt``
_UGT = IntegerAttr(llvm.ICmpPredicateFlag("ugt").to_int(), i64)
_INBOUNDS = UnitAttr()


def address_of(name: str) -> llvm.AddressOfOp:
    """``llvm.AddressOfOp(name, PTR)``."""
    return llvm.AddressOfOp.create(result_types=[PTR], properties={"global_name": SymbolRefAttr(name)})


def _extract_field(aggregate: SSAValue, field: int, result_type: Attribute) -> llvm.ExtractValueOp:
    """``llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [field]), aggregate, result_type)``."""
    return llvm.ExtractValueOp.create(operands=[aggregate], result_types=[result_type],
                                      properties={"position": _FIELDS[field]})


def _inbounds_gep(ptr: SSAValue, index: SSAValue, elem: Attribute) -> llvm.GEPOp:
    """``llvm.GEPOp(ptr, [GEP_USE_SSA_VAL], elem, ssa_indices=[index], inbounds=True)``."""
    gep = fast_ops.gep(ptr, [llvm.GEP_USE_SSA_VAL], elem, [index])
    gep.properties["inbounds"] = _INBOUNDS
    return gep


def _reserve_bytes(count: SSAValue, size: SSAValue, e: Emitter) -> SSAValue:
    """``count * size`` in i64, or ``UINT64_MAX`` when the product wraps: no allocator
    gives that many bytes, so the growth path calls the out-of-memory reporter. A
    wrapped product (a huge or negative trip count) reserved a buffer too small, which
    the taped loop then wrote past (session 32)."""
    all_ones = e.const(i64, -1)
    limit = e.value(llvm.UDivOp.create(operands=[all_ones, size], result_types=[i64]))  # (a constant once folded)
    wraps = e.value(fast_ops.icmp(llvm_op("llvm.icmp"), count, limit, _UGT))
    product = e.value(fast_ops.int_arith(llvm.MulOp, count, size))
    return e.value(fast_ops.select(llvm_op("llvm.select"), wraps, all_ones, product))


def _cache_slot(op: Operation, elem: Attribute, e: Emitter) -> SSAValue:
    """Address of slot ``op.index`` of the cache's current data."""
    elem = e.type(elem)
    data = e.value(ExtLoadOp(op.cache, PTR))
    return e.value(_inbounds_gep(data, op.index, elem))


def _tape_access(access: Operation, op: Operation, e: Emitter) -> Operation:
    """Mark a load/store of an indexed cache's buffer as such: the buffer is memory of
    its own (see zymase.transforms.alias_scopes)."""
    access.attributes[TAPE_BUFFER] = StringAttr(e.fn.indexed_caches[op.cache][1])
    return access


@lowers(enzyme.CacheStoreOp)
def _lower_cache_store(op: enzyme.CacheStoreOp, e: Emitter) -> Sequence[SSAValue]:
    value = op.value
    if isinstance(value, OpResult) and value.owner.name == "llvm.load" and not _from_stack(value.owner):
        # A loop that loads values and stores them to consecutive slots is what LLVM's
        # loop-idiom pass turns into a memcpy call: for the short runs of a tape (GMM's
        # d = 2..10 elements per point and component) the libc call costs more than the
        # copy, 11% of GMM's gradient at d = 2. A freeze of the loaded value (a no-op in
        # machine code; a poison value becomes some fixed value, which is a refinement)
        # is not a load, so the stores stay in the loop and vectorize with it.
        # Not for a stack slot: SROA turns its loads into the values stored, and
        # InstCombine then moves the freeze into their computation, where it hides an
        # accumulator's reduction from the loop vectorizer (`double acc[4]`).
        value = e.value(llvm_ext.FreezeOp(value))
    e.emit(_tape_access(ExtStoreOp(value, _cache_slot(op, op.value.type, e)), op, e))
    if tape_stats_enabled():
        e.fn.module.require_cache_runtime(e)
        stats = e.value(address_of(TAPE_STATS_COUNTER))
        old = e.value(ExtLoadOp(stats, i64))
        size = e.size_of(e.type(op.value.type))
        e.emit(ExtStoreOp(e.value(llvm.AddOp(old, size)), stats))
    return []


def _from_stack(load: Operation) -> bool:
    """Whether a load reads a stack slot (its address derives from an ``alloca``)."""
    from zymase.analysis.memory import memory_kind

    ptr = load.operands[0]
    while isinstance(ptr, OpResult) and memory_kind(ptr.owner) == "derive":
        ptr = ptr.owner.operands[0]
    return isinstance(ptr, OpResult) and isinstance(ptr.owner, llvm.AllocaOp)


@lowers(enzyme.CacheLoadOp)
def _lower_cache_load(op: enzyme.CacheLoadOp, e: Emitter) -> Sequence[SSAValue]:
    return [e.value(_tape_access(ExtLoadOp(_cache_slot(op, op.result.type, e), e.type(op.result.type)), op, e))]


# Written as llvm-dialect MLIR text and parsed with zymase.ir.parse_mlir, rather
# than as LLVM IR for zymase.llvm.reader or as Python builder calls: it reads like
# IR, needs nothing beyond the parser we already have (no LLVM-IR round trip), and
# yields exactly the dialect the writer consumes. One byte-generic pair serves every
# element type; both are tiny and internal, so the O2 inliner inlines them at each
# push/pop and the byte count becomes a constant. Growth doubles the capacity
# (at least 256 bytes), so n pushes cost O(n) amortized. What an indexed cache runs a
# few times per call at most (growing, taking and giving back the spare buffer with its
# atomics) is in ``noinline`` helpers: inlined at every site it was 2-25% of the module
# the post-AD pipeline optimizes and compiles, for no run time gained. The reserve
# itself is ``alwaysinline``: with calls left in it LLVM's inliner would sometimes keep
# it a call, at every entry of a taped loop. The push keeps its growth inline: as a call
# taking the cache's address it cost GMM's gradient 0.7% more instructions. (zymase's
# own inliner, ``autodiff/common.prepare``, inlines them all when a derivative is
# differentiated again.)
_STRUCT = f"!llvm.struct<(ptr, i64, i64, array<{CACHE_INLINE_BYTES} x i8>)>"

_CACHE_RUNTIME = f"""
builtin.module {{
  llvm.func internal @{CACHE_PUSH}(%cache: !llvm.ptr, %nbytes: i64) -> !llvm.ptr {{
    %size_p = llvm.getelementptr %cache[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %cap_p = llvm.getelementptr %cache[0, 2] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %size = llvm.load %size_p : !llvm.ptr -> i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    %need = llvm.add %size, %nbytes : i64
    {{TAPE_STATS}}
    %full = llvm.icmp "ugt" %need, %cap : i64
    llvm.cond_br %full, ^grow, ^store
  ^grow:
    %inline = llvm.getelementptr %cache[0, 3] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %old = llvm.load %cache : !llvm.ptr -> !llvm.ptr
    %zero = llvm.mlir.constant(0 : i64) : i64
    %inline_bytes = llvm.mlir.constant({CACHE_INLINE_BYTES} : i64) : i64
    %fresh = llvm.icmp "eq" %cap, %zero : i64
    %fits = llvm.icmp "ule" %need, %inline_bytes : i64
    %use_inline = llvm.and %fresh, %fits : i1
    llvm.cond_br %use_inline, ^start_inline, ^heap
  ^start_inline:
    llvm.store %inline, %cache : !llvm.ptr, !llvm.ptr
    llvm.store %inline_bytes, %cap_p : i64, !llvm.ptr
    llvm.br ^store
  ^heap:
    %two = llvm.mlir.constant(2 : i64) : i64
    %min = llvm.mlir.constant(256 : i64) : i64
    %doubled = llvm.mul %cap, %two : i64
    %enough = llvm.call_intrinsic "llvm.umax.i64"(%doubled, %need) : (i64, i64) -> i64
    %newcap = llvm.call_intrinsic "llvm.umax.i64"(%enough, %min) : (i64, i64) -> i64
    %nowhere = llvm.mlir.zero : !llvm.ptr
    %was_inline = llvm.icmp "eq" %old, %inline : !llvm.ptr
    llvm.cond_br %was_inline, ^leave_inline, ^regrow
  ^leave_inline:
    %moved = llvm.call @malloc(%newcap) : (i64) -> !llvm.ptr
    %lost = llvm.icmp "eq" %moved, %nowhere : !llvm.ptr
    llvm.cond_br %lost, ^out_of_memory, ^move
  ^move:
    %no = llvm.mlir.constant(false) : i1
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%moved, %old, %size, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.store %moved, %cache : !llvm.ptr, !llvm.ptr
    llvm.store %newcap, %cap_p : i64, !llvm.ptr
    llvm.br ^store
  ^regrow:
    %new = llvm.call @realloc(%old, %newcap) : (!llvm.ptr, i64) -> !llvm.ptr
    %lost_re = llvm.icmp "eq" %new, %nowhere : !llvm.ptr
    llvm.cond_br %lost_re, ^out_of_memory, ^regrown
  ^regrown:
    llvm.store %new, %cache : !llvm.ptr, !llvm.ptr
    llvm.store %newcap, %cap_p : i64, !llvm.ptr
    llvm.br ^store
  ^out_of_memory:
    llvm.call @{TAPE_OUT_OF_MEMORY}(%newcap) : (i64) -> ()
    llvm.unreachable
  ^store:
    %data = llvm.load %cache : !llvm.ptr -> !llvm.ptr
    %slot = llvm.getelementptr %data[%size] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %need, %size_p : i64, !llvm.ptr
    llvm.return %slot : !llvm.ptr
  }}
  llvm.func internal @{POOL_TAKE}(%site: !llvm.ptr) -> !llvm.struct<(ptr, i64)> attributes {{passthrough = ["noinline"]}} {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %null = llvm.mlir.zero : !llvm.ptr
    %u0 = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
    %lock_old = llvm.atomicrmw xchg %site, %one acquire : !llvm.ptr, i64
    %got = llvm.icmp "eq" %lock_old, %zero : i64
    llvm.cond_br %got, ^take, ^none
  ^take:
    %blockp = llvm.getelementptr %site[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %capp = llvm.getelementptr %site[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %block = llvm.load %blockp : !llvm.ptr -> !llvm.ptr
    %have = llvm.load %capp : !llvm.ptr -> i64
    llvm.store %null, %blockp : !llvm.ptr, !llvm.ptr
    llvm.store %zero, %capp : i64, !llvm.ptr
    %u1 = llvm.atomicrmw xchg %site, %zero release : !llvm.ptr, i64
    %h1 = llvm.insertvalue %block, %u0[0] : !llvm.struct<(ptr, i64)>
    %h2 = llvm.insertvalue %have, %h1[1] : !llvm.struct<(ptr, i64)>
    llvm.return %h2 : !llvm.struct<(ptr, i64)>
  ^none:
    %n1 = llvm.insertvalue %null, %u0[0] : !llvm.struct<(ptr, i64)>
    %n2 = llvm.insertvalue %zero, %n1[1] : !llvm.struct<(ptr, i64)>
    llvm.return %n2 : !llvm.struct<(ptr, i64)>
  }}
  llvm.func internal @{POOL_GIVE}(%site: !llvm.ptr, %block: !llvm.ptr, %cap: i64) attributes {{passthrough = ["noinline"]}} {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %null = llvm.mlir.zero : !llvm.ptr
    %none = llvm.icmp "eq" %block, %null : !llvm.ptr
    llvm.cond_br %none, ^out, ^lock
  ^lock:
    %lock_old = llvm.atomicrmw xchg %site, %one acquire : !llvm.ptr, i64
    %got = llvm.icmp "eq" %lock_old, %zero : i64
    llvm.cond_br %got, ^check, ^drop
  ^check:
    %blockp = llvm.getelementptr %site[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %held = llvm.load %blockp : !llvm.ptr -> !llvm.ptr
    %empty = llvm.icmp "eq" %held, %null : !llvm.ptr
    llvm.cond_br %empty, ^keep, ^busy
  ^keep:
    %capp = llvm.getelementptr %site[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %block, %blockp : !llvm.ptr, !llvm.ptr
    llvm.store %cap, %capp : i64, !llvm.ptr
    %u2 = llvm.atomicrmw xchg %site, %zero release : !llvm.ptr, i64
    llvm.br ^out
  ^busy:
    %u1 = llvm.atomicrmw xchg %site, %zero release : !llvm.ptr, i64
    llvm.br ^drop
  ^drop:
    llvm.call @free(%block) : (!llvm.ptr) -> ()
    llvm.br ^out
  ^out:
    llvm.return
  }}
  llvm.func internal @{CACHE_RESERVE}(%site: !llvm.ptr, %data: !llvm.ptr, %cap: i64, %need: i64) -> !llvm.struct<(ptr, i64)> attributes {{passthrough = ["alwaysinline"]}} {{
    %u0 = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
    %null = llvm.mlir.zero : !llvm.ptr
    %first = llvm.icmp "eq" %data, %null : !llvm.ptr
    llvm.cond_br %first, ^from_site, ^check(%data, %cap : !llvm.ptr, i64)
  ^from_site:
    %taken = llvm.call @{POOL_TAKE}(%site) : (!llvm.ptr) -> !llvm.struct<(ptr, i64)>
    %tdata = llvm.extractvalue %taken[0] : !llvm.struct<(ptr, i64)>
    %tcap = llvm.extractvalue %taken[1] : !llvm.struct<(ptr, i64)>
    llvm.br ^check(%tdata, %tcap : !llvm.ptr, i64)
  ^check(%d: !llvm.ptr, %c: i64):
    %full = llvm.icmp "ugt" %need, %c : i64
    llvm.cond_br %full, ^grow, ^keep
  ^keep:
    %k0 = llvm.insertvalue %d, %u0[0] : !llvm.struct<(ptr, i64)>
    %k1 = llvm.insertvalue %c, %k0[1] : !llvm.struct<(ptr, i64)>
    llvm.return %k1 : !llvm.struct<(ptr, i64)>
  ^grow:
    %g = llvm.call @{CACHE_REGROW}(%d, %c, %need) : (!llvm.ptr, i64, i64) -> !llvm.struct<(ptr, i64)>
    llvm.return %g : !llvm.struct<(ptr, i64)>
  }}
  llvm.func internal @{CACHE_REGROW}(%d: !llvm.ptr, %c: i64, %need: i64) -> !llvm.struct<(ptr, i64)> attributes {{passthrough = ["noinline"]}} {{
    %u0 = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
    %two = llvm.mlir.constant(2 : i64) : i64
    %min = llvm.mlir.constant(256 : i64) : i64
    %doubled = llvm.mul %c, %two : i64
    %enough = llvm.call_intrinsic "llvm.umax.i64"(%doubled, %need) : (i64, i64) -> i64
    %newcap = llvm.call_intrinsic "llvm.umax.i64"(%enough, %min) : (i64, i64) -> i64
    %new = llvm.call @realloc(%d, %newcap) : (!llvm.ptr, i64) -> !llvm.ptr
    %nowhere = llvm.mlir.zero : !llvm.ptr
    %lost = llvm.icmp "eq" %new, %nowhere : !llvm.ptr
    llvm.cond_br %lost, ^out_of_memory, ^grown
  ^out_of_memory:
    llvm.call @{TAPE_OUT_OF_MEMORY}(%newcap) : (i64) -> ()
    llvm.unreachable
  ^grown:
    %g0 = llvm.insertvalue %new, %u0[0] : !llvm.struct<(ptr, i64)>
    %g1 = llvm.insertvalue %newcap, %g0[1] : !llvm.struct<(ptr, i64)>
    llvm.return %g1 : !llvm.struct<(ptr, i64)>
  }}
  llvm.func internal @{TAPE_OUT_OF_MEMORY}(%bytes: i64) attributes {{passthrough = ["noinline", "cold"]}} {{
    %fd = llvm.mlir.constant(2 : i32) : i32
    %len = llvm.mlir.constant({len(TAPE_OUT_OF_MEMORY_MESSAGE.encode())} : i64) : i64
    %msg = llvm.mlir.addressof @{TAPE_OUT_OF_MEMORY_GLOBAL} : !llvm.ptr
    %w = llvm.call @write(%fd, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  }}
{HEAP_TAPE_RUNTIME}  llvm.func internal @{CACHE_POP}(%cache: !llvm.ptr, %nbytes: i64) -> !llvm.ptr {{
    %size_p = llvm.getelementptr %cache[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %size = llvm.load %size_p : !llvm.ptr -> i64
    %rest = llvm.sub %size, %nbytes : i64
    llvm.store %rest, %size_p : i64, !llvm.ptr
    %data = llvm.load %cache : !llvm.ptr -> !llvm.ptr
    %slot = llvm.getelementptr %data[%rest] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.return %slot : !llvm.ptr
  }}
}}
"""


# With ZYMASE_TAPE_STATS=1 at compile time, every push also adds its size to the
# weak global counter ``__zymase_tape_bytes`` (i64), which a program can declare as
# ``extern long __zymase_tape_bytes;`` and print: the measurement of how many bytes
# reverse mode tapes (bench/ and the issue notes use it). Off by default.
TAPE_STATS_GLOBAL = """
  llvm.mlir.global weak @__zymase_tape_bytes(0 : i64) {alignment = 8 : i64} : i64
"""
_TAPE_STATS_COUNT = """%stats = llvm.mlir.addressof @__zymase_tape_bytes : !llvm.ptr
    %stats_old = llvm.load %stats : !llvm.ptr -> i64
    %stats_new = llvm.add %stats_old, %nbytes : i64
    llvm.store %stats_new, %stats : i64, !llvm.ptr"""


TAPE_STATS_COUNTER = "__zymase_tape_bytes"


def tape_stats_enabled() -> bool:
    import os

    return bool(os.environ.get("ZYMASE_TAPE_STATS"))


def cache_runtime_text(only: frozenset[str] | None = None) -> str:
    """The cache runtime as an llvm-dialect module (with the stats counter when
    ``ZYMASE_TAPE_STATS`` is set); ``only``: just those of its functions (see
    :func:`cache_runtime_closure`)."""
    text = _CACHE_RUNTIME.replace("{TAPE_STATS}", _TAPE_STATS_COUNT if tape_stats_enabled() else "")
    if only is not None:
        head, functions = _runtime_functions(text)
        text = head + "".join(body for name, body in functions if name in only) + "}\n"
    if tape_stats_enabled():
        text = text.replace("builtin.module {", "builtin.module {" + TAPE_STATS_GLOBAL, 1)
    return text


def cache_runtime_closure(entries) -> frozenset[str]:
    """The runtime functions lowered code calling ``entries`` needs: those and, through
    the runtime's own calls, what they call. A module gets only these (issue 29: xDSL's
    parse of the whole runtime, 0.04-0.05 s of CPU when nothing is cached yet, was 3-4%
    of a first ``zymase.grad`` call that needs four of its nine functions)."""
    calls = _runtime_calls()
    needed, todo = set(), [name for name in entries if name in calls]
    while todo:
        name = todo.pop()
        if name not in needed:
            needed.add(name)
            todo += calls[name]
    return frozenset(needed)


def _runtime_functions(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(the module's text before its first function, [(name, text) of each function])."""
    import re

    head, *bodies = re.split(r"(?m)^(?=  llvm\.func )", text)
    bodies[-1] = bodies[-1][:bodies[-1].rindex("}")]  # the module's closing brace
    return head, [(re.match(r"  llvm\.func \w+ @([\w.]+)\(", body).group(1), body) for body in bodies]


#: the names of the runtime's functions
CACHE_RUNTIME_FUNCTIONS = frozenset(name for name, _ in _runtime_functions(_CACHE_RUNTIME)[1])
_CALLS: dict[str, list[str]] = {}


def _runtime_calls() -> dict[str, list[str]]:
    """Each runtime function's calls of other runtime functions."""
    import re

    if not _CALLS:
        functions = _runtime_functions(_CACHE_RUNTIME)[1]
        names = {name for name, _ in functions}
        for name, body in functions:
            _CALLS[name] = [c for c in re.findall(r"llvm\.call @([\w.]+)\(", body) if c in names and c != name]
    return _CALLS
