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
  memory, a captured variable or a pointer loaded from one (``slot``); a captured object
  both read and written is accessed only by sums ``*s += e`` (a 'reduction' combine,
  made a critical section as the derivative sees it, or a 'critical' sum);
- in the caller, each captured variable behind a pointer the region dereferences is a
  stack slot with one store (the pointer clang captured); for every object the region
  reads or writes, ``gen.unwritten_after(call, ...)`` holds (nothing after the call, nor
  the call again in a loop, writes it), except a summed object, which must be a stack
  slot of the caller that only it and ``call`` use (the recomputation adds into it a
  second time, which nobody sees after the gradient returns, and the caller's reverse
  sweep tapes what it loaded from it before the call); no object read may share memory
  with one written (``WrittenMemory._may_share``: distinct allocations, or arguments
  marked ``noalias``/``restrict``), nor two written objects. Pointers that may alias keep
  the split region.

``primal_needed(gen, call)``: if nothing after the call reads the memory the region
writes, the forward sweep does not fork the primal region at all: the recomputation in
the reverse sweep is its only run, and writes the same results.

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
_RECOMPUTABLE_RUNTIME = {
    "__kmpc_for_static_init_4", "__kmpc_for_static_init_4u", "__kmpc_for_static_init_8",
    "__kmpc_for_static_init_8u", "__kmpc_for_static_fini", "__kmpc_global_thread_num",
    "__kmpc_barrier", "__kmpc_critical", "__kmpc_end_critical", "__kmpc_single", "__kmpc_end_single",
    "__kmpc_master", "__kmpc_end_master", "__kmpc_masked", "__kmpc_end_masked",
}
"""The OpenMP runtime calls a recomputed region may make: its schedule (recomputed for the
reverse fork's own team) and synchronization. Not ``omp_get_thread_num`` and the like,
whose values depend on the team."""


def recomputable(gen, call: Operation) -> bool:
    """Whether the reverse sweep of ``gen`` may fork the combined derivative of the
    outlined region ``call`` calls (see the module docstring)."""
    return _plan(gen, call) is not None


def runtime_check(gen, call: Operation):
    """For a recomputable region whose arrays may overlap: the run-time check of their
    address ranges (``region_versioning``) that chooses between the recomputed and the
    taped derivative; None when the region is recomputed unconditionally."""
    if _plan(gen, call) is None:
        return None
    return gen.__dict__.get("_region_checks", {}).get(call)


def primal_needed(gen, call: Operation) -> bool:
    """For a recomputable region: whether the forward sweep must still fork the primal
    region, because something after it reads (or may read) memory the region writes.
    If nothing does, the recomputation in the reverse sweep is the only run."""
    written = _plan(gen, call)
    ops = list(call.parent_block().ops)
    after = ops[ops.index(call) + 1:] + [op for b in gen._reachable_after(call.parent_block()) for op in b.ops]
    for op in after:
        kind = memory_kind(op)
        if kind == "load":
            read = [op.ptr]
        elif kind == "memcpy":
            read = [op.operands[1]]
        elif isinstance(op, (llvm.CallOp, llvm.CallIntrinsicOp)) and not (
                isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(MARKER_INTRINSICS)):
            if any(isinstance(o.type, llvm.LLVMPointerType) for o in op.operands) or gen.ctx.defined_function(op):
                return True  # what a call reads is not followed here
            continue
        else:
            continue
        for p in read:
            roots = gen._roots(p)
            if roots is None or any(gen._may_share(r, w) for r in roots for w in written):
                if not (kind == "load" and _only_returned_unneeded(gen, op)):
                    return True
    return False


def _only_returned_unneeded(gen, load: Operation) -> bool:
    """The loaded value only becomes a result of the function whose primal value the
    derivative does not return (``return s`` after a reduction, differentiated by
    ``__enzyme_autodiff``): its reverse needs the adjoint, not the value."""
    unneeded = {v for v, a in zip(gen.p.returned, gen.ret_acts) if not a.needs_primal}
    work, seen = [load.results[0]], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            user = use.operation
            if isinstance(user, llvm.ReturnOp):
                if v not in unneeded:
                    return False
            elif isinstance(user, llvm.BrOp):
                arg = user.successor.args[use.index]
                if arg not in unneeded:
                    return False
                work.append(arg)
            else:
                return False
    return True


def _plan(gen, call: Operation):
    """The roots (in the caller) of the memory a recomputable region writes; None when
    the region is not recomputable."""
    from zymase.autodiff import numba_parfor
    from zymase.transforms.numba_parfor import is_parfor
    from zymase.transforms.openmp import SERIALIZED, is_outlined_region

    cache = gen.__dict__.setdefault("_recomputed_regions", {})
    if call not in cache:
        callee = gen.ctx.defined_function(call)
        plan = None
        if is_parfor(callee) and not gen.split and gen.width == 1:
            # a Numba prange loop (autodiff/numba_parfor.py)
            plan = numba_parfor.plan(gen, call)
        elif (callee is not None and is_outlined_region(callee) and not gen.split
                and gen.flavor.name == "llvm" and SERIALIZED not in call.attributes):
            accesses = _region_accesses(gen, callee)
            if accesses is not None:
                plan = _caller_allows(gen, call, *accesses)
        cache[call] = plan
    return cache[call]


def _region_accesses(gen, region: Operation):
    """(keys read, keys written, keys summed into) of the captured objects the region's
    loads and stores reach, a key being ``("arg", k)`` or ``("slot", k)`` (the pointer
    stored in captured variable ``k``); None when an access or a call is beyond this
    analysis. An object both read and written is allowed only when every access to it
    is a sum ``*s += e`` (a 'reduction' combine, made a critical section as the
    derivative sees it, or a 'critical' sum): the value read then feeds only that sum,
    whose derivative does not depend on it."""
    from zymase.transforms.openmp import reductions_as_critical

    body = region.body.clone()
    reductions_as_critical(body)
    reads: dict = {}
    writes: dict = {}
    for op in body.walk():
        kind = memory_kind(op)
        if kind in ("load", "store"):
            key = _key(op.ptr)
            if key is _UNSEEN:
                return None
            if key is not None:
                (reads if kind == "load" else writes).setdefault(key, []).append(op)
        elif kind in (None, "derive", "select", "alloca", "global"):
            if not recomputes_alike(gen, op, lambda name: name in _RECOMPUTABLE_RUNTIME):
                return None
        else:
            return None
    summed = set(reads) & set(writes)
    if any(not all(_sum_update(load) for load in reads[k]) or len(reads[k]) != len(writes[k]) for k in summed):
        return None
    return set(reads), set(writes), summed


def recomputes_alike(gen, op: Operation, runtime_allowed) -> bool:
    """Whether ``op`` (not a load, store or memory call) computes the same again when a
    region is recomputed: no call that may read or write state (rand) or give the
    thread's number (the recomputation's team may differ), other than the runtime calls
    ``runtime_allowed(name)`` accepts, no intrinsic taking pointers, no atomics."""
    name = callee_name(op) if isinstance(op, llvm.CallOp) else None
    if name is not None and not runtime_allowed(name) and not _pure_math(gen, op):
        return False
    if isinstance(op, llvm.CallIntrinsicOp) and not op.intrin.data.startswith(MARKER_INTRINSICS) and any(
            isinstance(o.type, llvm.LLVMPointerType) for o in op.operands):
        return False
    return op.name not in ("llvm.atomicrmw", "llvm.cmpxchg")


def _pure_math(gen, call: Operation) -> bool:
    """A declared math function with a derivative rule (it writes errno at most),
    called without pointer operands."""
    name = callee_name(call)
    return (gen.ctx.defined_function(call) is None and not any(isinstance(o.type, llvm.LLVMPointerType)
                                                               for o in call.operands)
            and gen.ctx.rule_for(call) is not None and not name.startswith("lgamma"))


def _sum_update(load: Operation) -> bool:
    """``load`` is the old value of ``*p = old + e`` (or ``old - e``) and used nowhere else."""
    uses = list(load.results[0].uses)
    if len(uses) != 1:
        return False
    add = uses[0].operation
    if not isinstance(add, (llvm.FAddOp, llvm.FSubOp)) or (isinstance(add, llvm.FSubOp)
                                                           and add.operands[0] is not load.results[0]):
        return False
    stores = [u.operation for u in add.results[0].uses]
    return (len(stores) == 1 and isinstance(stores[0], llvm.StoreOp) and stores[0].value is add.results[0]
            and stores[0].ptr is load.ptr)


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


def _caller_allows(gen, call: Operation, reads: set, writes: set, summed: set):
    """The caller's side (module docstring): the roots of the written objects, or None."""
    args = list(gen.flavor.call_args(call))
    values: dict = {}
    for key in reads | writes:
        kind, k = key
        if k >= len(args):
            return None
        if kind == "arg":
            values[key] = args[k]
            continue
        # the captured variable's one store: the pointer it holds during the region
        slot = args[k]
        if not gen.unwritten_after(call, slot):
            return None
        stored = _only_store(slot, call)
        if stored is None:
            return None
        values[key] = stored
    roots = {key: gen._roots(v) for key, v in values.items()}
    if any(r is None for r in roots.values()):
        return None
    for key, v in values.items():
        if key in summed:
            # the recomputation adds into it again: only a local nobody reads afterwards
            if not all(_private_to(r, call) for r in roots[key]):
                return None
        elif not gen.unwritten_after(call, v):
            return None
    pairs = [(r, w) for r in reads for w in writes if r != w] + [(w, v) for w in writes for v in writes if w < v]
    written = {x for w in writes for x in roots[w]}
    unsure = [(r, w) for r, w in pairs if any(gen._may_share(x, y) for x in roots[r] for y in roots[w])]
    if unsure:
        # arrays that may overlap (no restrict): recomputed only where a run-time check of
        # their address ranges finds them apart (autodiff/region_versioning.py)
        from zymase.autodiff import region_versioning

        stable = {k for k in reads - writes if not any(gen._may_share(x, y) for x in roots[k] for y in written)}
        check = region_versioning.plan_check(gen, gen.ctx.defined_function(call), unsure, stable)
        if check is None:
            return None
        gen.__dict__.setdefault("_region_checks", {})[call] = check
    return written


def _private_to(root, call: Operation) -> bool:
    """``root`` is a stack slot of the caller that only loads, stores, lifetime markers
    and ``call`` use: after the gradient returns nobody sees what it holds, and the
    caller's own reverse sweep tapes what it loaded before ``call`` (which writes it)."""
    if not isinstance(root, Operation) or memory_kind(root) != "alloca":
        return False
    for use in root.results[0].uses:
        user = use.operation
        if isinstance(user, llvm.LoadOp) or (isinstance(user, llvm.StoreOp) and user.value is not root.results[0]):
            continue
        if user is call or (isinstance(user, llvm.CallIntrinsicOp) and user.intrin.data.startswith("llvm.lifetime")):
            continue
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
