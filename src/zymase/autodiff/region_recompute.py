"""When the reverse sweep of an OpenMP parallel region may recompute the region instead of
taping it (a mixin-free helper of ``reverse.ReverseGenerator``).

By default a region called from a function being reversed is split (``Driver.split``):
the forward sweep forks the augmented region, which pushes every value the reverse needs
on each thread's global tape (split mode: no indexed caches, no re-reads, one push per
value and per branch edge), and the reverse sweep forks the reverse region, which pops
them. For a region that only reads memory nothing overwrites before the reverse sweep,
that tape is not needed: the forward sweep forks the primal region unchanged, and the
reverse sweep forks the region's combined reverse derivative, in which each thread
recomputes its own iterations' values with the engine's full machinery (counted loops,
indexed caches local to the thread, loads read again). The primal stores the
recomputation repeats write the values the forward sweep wrote, so they must not have
been overwritten since either.

``recomputable(gen, call)`` decides, once per call, from both sides:

- inside the region (and nothing it calls but the OpenMP runtime and calls without
  pointer operands), every load and store goes through a thread id, the region's own
  memory, a captured variable or a pointer loaded from one (``slot``); no captured
  object is both read and written (a 'reduction' combine or a 'critical' sum writes what
  it reads: such regions stay split);
- in the caller, each captured variable behind a pointer the region dereferences is a
  stack slot with one store (the pointer clang captured), and, for every object the
  region reads or writes, ``gen.unwritten_after(call, ...)`` holds (nothing after the
  call, nor the call again in a loop, writes it), and no object read may share memory
  with one written (``WrittenMemory._may_share``: distinct allocations, or arguments
  marked ``noalias``/``restrict``), nor two written objects share memory. Pointers
  that may alias keep the split region.

The combined derivative is only ever forked by such a caller (``transforms/openmp``
refuses a region's combined derivative otherwise), so its generator takes the objects
behind captured variables as distinct objects of their own (``CapturedObject``, a
pointer root for ``WrittenMemory``): the loads of what the region only reads are then
read again in its reverse sweep instead of taped.
"""

from __future__ import annotations

from zymase.analysis.memory import MARKER_INTRINSICS, callee_name, memory_kind
from zymase.ir import BlockArgument, Operation, SSAValue, llvm

_UNSEEN = object()


def recomputable(gen, call: Operation) -> bool:
    """Whether the reverse sweep of ``gen`` may fork the combined derivative of the
    outlined region ``call`` calls (see the module docstring)."""
    from zymase.transforms.openmp import SERIALIZED, is_outlined_region

    cache = gen.__dict__.setdefault("_recomputed_regions", {})
    if call not in cache:
        callee = gen.ctx.defined_function(call)
        ok = (callee is not None and is_outlined_region(callee) and not gen.split and gen.width == 1
              and gen.flavor.name == "llvm" and SERIALIZED not in call.attributes)
        if ok:
            accesses = _region_accesses(gen, callee)
            ok = accesses is not None and _caller_allows(gen, call, *accesses)
        cache[call] = ok
    return cache[call]


def _region_accesses(gen, region: Operation):
    """(keys read, keys written) of the captured objects the region's loads and stores
    reach, a key being ``("arg", k)`` or ``("slot", k)`` (the pointer stored in captured
    variable ``k``); None when an access or a call is beyond this analysis."""
    from zymase.transforms.openmp import _EVERYWHERE, _SYNCHRONIZATION

    reads: set = set()
    writes: set = set()
    for op in region.walk():
        kind = memory_kind(op)
        if kind in ("load", "store"):
            key = _key(op.ptr)
            if key is _UNSEEN:
                return None
            if key is not None:
                (reads if kind == "load" else writes).add(key)
        elif kind in (None, "derive", "select", "alloca", "global"):
            name = callee_name(op) if isinstance(op, llvm.CallOp) else None
            if name is not None and name not in _EVERYWHERE and name not in _SYNCHRONIZATION and (
                    gen.ctx.defined_function(op) is not None
                    or any(isinstance(o.type, llvm.LLVMPointerType) for o in op.operands)):
                return None
            if isinstance(op, llvm.CallIntrinsicOp) and not op.intrin.data.startswith(MARKER_INTRINSICS) and any(
                    isinstance(o.type, llvm.LLVMPointerType) for o in op.operands):
                return None
            if op.name in ("llvm.atomicrmw", "llvm.cmpxchg"):
                return None
        else:
            return None
    if reads & writes:
        return None
    return reads, writes


def _key(ptr: SSAValue):
    """``("arg", k)``, ``("slot", k)``, None for the region's own memory or a thread id,
    ``_UNSEEN`` otherwise."""
    ptr = _base(ptr)
    if isinstance(ptr, BlockArgument):
        if ptr.block is not ptr.block.parent.blocks[0]:
            return _UNSEEN
        return None if ptr.index < 2 else ("arg", ptr.index)
    op = ptr.owner
    if memory_kind(op) == "alloca":
        return None
    if isinstance(op, llvm.LoadOp):
        inner = op.ptr
        if isinstance(inner, BlockArgument) and inner.block is inner.block.parent.blocks[0] and inner.index >= 2:
            return ("slot", inner.index)
    return _UNSEEN


def _caller_allows(gen, call: Operation, reads: set, writes: set) -> bool:
    args = list(gen.flavor.call_args(call))
    values: dict = {}
    for key in reads | writes:
        kind, k = key
        if k >= len(args):
            return False
        if kind == "arg":
            values[key] = args[k]
            continue
        # the captured variable's one store: the pointer it holds during the region
        slot = args[k]
        if not gen.unwritten_after(call, slot):
            return False
        stored = _only_store(slot, call)
        if stored is None:
            return False
        values[key] = stored
    for key, v in values.items():
        if not gen.unwritten_after(call, v):
            return False
    pairs = [(r, w) for r in reads for w in writes] + [(w, v) for w in writes for v in writes if w < v]
    for r, w in pairs:
        a, b = gen._roots(values[r]), gen._roots(values[w])
        if a is None or b is None or any(gen._may_share(x, y) for x in a for y in b):
            return False
    return True


def _only_store(slot: SSAValue, call: Operation) -> SSAValue | None:
    """The value of the one store into stack slot ``slot`` of the caller (None if it is
    not such a slot, or if anything but loads and ``call`` uses it)."""
    if isinstance(slot, BlockArgument) or memory_kind(slot.owner) != "alloca":
        return None
    stores = []
    for use in slot.uses:
        user = use.operation
        if isinstance(user, llvm.StoreOp) and user.ptr is slot and user.value is not slot:
            stores.append(user)
        elif isinstance(user, llvm.LoadOp) or user is call or (
                isinstance(user, llvm.CallIntrinsicOp) and user.intrin.data.startswith("llvm.lifetime")):
            continue
        else:
            return None  # another call, a derived address: writes this analysis does not follow
    return stores[0].value if len(stores) == 1 else None


class CapturedObject:
    """The object behind captured variable ``index`` of a recomputed region (a pointer
    root: one per variable, apart from every other root)."""

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"CapturedObject({self.index})"


def captured_object(ptr: SSAValue, entry, known: dict) -> CapturedObject | None:
    """The captured object ``ptr`` points into (a pointer loaded from captured variable
    ``k``, plus offsets), or None; ``known`` keeps one root per variable."""
    key = _key(ptr)
    if not isinstance(key, tuple) or key[0] != "slot":
        return None
    slot = _base(ptr).owner.ptr
    if slot.block is not entry:
        return None
    return known.setdefault(key[1], CapturedObject(key[1]))


def _base(ptr: SSAValue) -> SSAValue:
    while not isinstance(ptr, BlockArgument) and memory_kind(ptr.owner) == "derive":
        ptr = ptr.owner.operands[0]
    return ptr
