"""When the reverse sweep may recompute a Numba ``prange`` loop, and which of its adjoint
updates must be atomic (helpers of ``reverse.ReverseGenerator``, for the parfor gufuncs of
``transforms/numba_parfor.py``).

A parfor ``G(dims, steps, data, p0, ..., p{n-1})`` (as ``transforms/numba_parfor.py``
unpacks it) reaches the arrays of the loop through the data pointers ``p_k`` (slot
``k``; slot 0 is Numba's schedule, ``[start, end]`` per row), advanced by ``steps[k]`` per
row of the schedule. Its reverse sweep runs as ``autodiff/region_recompute.py`` runs an OpenMP
region's: the caller's forward sweep forks the primal parfor (or skips it when nothing
after it reads what it writes), the reverse sweep forks its combined derivative, each
thread recomputing its own rows with the engine's counted loops and local caches. No
split-mode tape is needed, which Numba's JIT could not allocate per thread. That is
right when the recomputation sees the values the forward run saw:

- in the parfor, every load and store goes through the gufunc's own stack, ``dims``,
  ``steps``, or the array of a slot (possibly advanced per row by the pre-AD pipeline's
  strength reduction); the calls are
  math functions with rules, Numba's thread id (a reduction's partial result is indexed
  by it) and its error path; an array both read and written is accessed only by sums
  ``a[j] = a[j] + e`` (a reduction's per-thread partial results), whose derivative does
  not depend on the value read;
- in the caller, nothing after the call (nor the call again in a loop) writes ``dims``,
  ``steps`` or an array the parfor reads, nor an array it writes that the caller did
  not allocate (the recomputation writes it again; what it writes into the caller's own
  arrays nobody sees after the gradient returns, and the caller's reverse sweep re-reads
  only memory that nothing writes after the load); an array both read and written must
  be summed into and allocated by the caller; no array read may share memory with one
  written, nor two written ones.

Otherwise ``Driver.split`` refuses the parfor (``ParforSerial``) and the Numba front
end differentiates the function's serial copy.

Atomics: a thread adds the adjoints of what its rows read into the shadows. The rows are
disjoint ranges of the loop index, so ``a[i]`` with ``i`` the parfor's induction variable
(it starts at the row's ``start``, 1-D schedules) belongs to one row, hence to one thread,
when every access of the parfor to ``a`` uses that index: a map gets plain adds. A
stencil (``a[i - 1]``), an inner loop's index, a 2-D schedule or a reduction's
``partial[thread_id]`` gets ``atomicrmw fadd``.
"""

from __future__ import annotations

from zymase.analysis.memory import memory_kind
from zymase.autodiff.flavor import LLVM
from zymase.ir import BlockArgument, Operation, SSAValue, llvm
from zymase.transforms.numba_parfor import is_parfor

_UNSEEN = object()
#: Numba runtime calls a recomputed parfor may make: the thread id (indexing a
#: reduction's partial results) and, on its error path, the GIL and Python's error API
_ALLOWED_RUNTIME = ("get_thread_id", "numba_gil_ensure", "numba_gil_release", "numba_do_raise", "numba_unpickle",
                    "numba_runtime_build_excinfo_struct", "NRT_Free", "Py")


def plan(gen, call: Operation):
    """The roots (in the caller) of the memory the parfor ``call`` writes, when its
    reverse sweep may recompute it (module docstring); None otherwise."""
    callee = gen.ctx.defined_function(call)
    accesses = _parfor_accesses(gen, callee)
    if accesses is None:
        return None
    reads, writes, summed = accesses
    dims, steps, _data, *slots = gen.flavor.call_args(call)
    if not all(gen.unwritten_after(call, p) for p in (dims, steps)):
        return None
    roots = {}
    for k in reads | writes:
        roots[k] = gen._roots(slots[k])
        if roots[k] is None:
            return None
        if k in summed and any(gen._outside(r) for r in roots[k]):
            # the recomputation adds into it again: only memory the caller allocated
            return None
        if k in summed or (k in writes and k not in reads and not any(gen._outside(r) for r in roots[k])):
            # what the recomputation writes into the caller's own arrays is seen by no one:
            # the caller's reverse sweep re-reads only what nothing after the load writes
            continue
        if not gen.unwritten_after(call, slots[k]):
            return None
    pairs = [(r, w) for r in reads for w in writes if r != w] + [(w, v) for w in writes for v in writes if w < v]
    if any(gen._may_share(x, y) for a, b in pairs for x in roots[a] for y in roots[b]):
        return None
    return {x for k in writes for x in roots[k]}


def written_pointers(gen, call: Operation) -> list[SSAValue] | None:
    """The data pointers (in the caller) of the arrays parfor ``call`` writes; None when
    unknown. (``dims`` and ``steps`` it only reads.)"""
    accesses = _parfor_accesses(gen, gen.ctx.defined_function(call))
    if accesses is None:
        return None
    slots = gen.flavor.call_args(call)[3:]
    return [slots[k] for k in sorted(accesses[1])]


def _parfor_accesses(gen, parfor: Operation):
    """(slots read, slots written, slots summed into) of the parfor's array accesses;
    None when an access or a call is beyond this analysis."""
    from zymase.autodiff.region_recompute import recomputes_alike

    reads: dict = {}
    writes: dict = {}
    for op in parfor.walk():
        kind = memory_kind(op)
        if kind in ("load", "store", "memset", "memcpy"):
            if kind in ("load", "store"):
                pointers = [(op.ptr, reads if kind == "load" else writes)]
            else:
                pointers = [(op.operands[0], writes)] + ([(op.operands[1], reads)] if kind == "memcpy" else [])
            for ptr, table in pointers:
                key = slot_of(ptr)
                if key is _UNSEEN:
                    return None
                if isinstance(key, int):
                    table.setdefault(key, []).append(op)
        elif kind in (None, "derive", "select", "alloca"):
            if not recomputes_alike(gen, op, lambda name: name.startswith(_ALLOWED_RUNTIME)):
                return None
        else:
            return None
    summed = set(reads) & set(writes)
    for k in summed:
        stores = set()
        for load in reads[k]:
            found = _additive_update(load) if isinstance(load, llvm.LoadOp) else None
            if found is None:
                return None
            stores |= found
        if stores != set(writes[k]):
            return None
    return set(reads), set(writes), summed


def _additive_update(load: Operation) -> set[Operation] | None:
    """The stores of ``a[j] = a[j] + e1 + e2 ...`` that ``load`` (of ``a[j]``) starts, the
    sum possibly carried through a loop (a reduction's partial result): the loaded value
    reaches only additions, block arguments and those stores, none of which the other
    terms depend on. None if it is used any other way. The derivative of such stores
    does not depend on the value loaded."""
    chain, stores, work = {load.results[0]}, set(), [load.results[0]]
    while work:
        v = work.pop()
        for use in list(v.uses):
            user = use.operation
            if isinstance(user, llvm.FAddOp) or (isinstance(user, llvm.FSubOp) and user.operands[0] is v):
                if all(o in chain for o in user.operands):
                    return None
                new = [user.results[0]]
            elif isinstance(user, llvm.StoreOp) and user.value is v and user.ptr is load.ptr:
                stores.add(user)
                continue
            elif isinstance(user, (llvm.BrOp, llvm.CondBrOp)):
                new = [succ.args[j] for succ, operands in zip(user.successors, LLVM.successor_operands(user))
                       for j, o in enumerate(operands) if o is v]
            else:
                return None
            for n in new:
                if n not in chain:
                    chain.add(n)
                    work.append(n)
    for v in chain:
        if isinstance(v, BlockArgument):
            for pred in v.block.predecessors():
                for succ, operands in zip(pred.last_op.successors, LLVM.successor_operands(pred.last_op)):
                    if succ is v.block and operands[v.index] not in chain:
                        return None
    return stores


def slot_of(ptr: SSAValue):
    """The slot whose array ``ptr`` points into (an int); ``"dims"``, ``"steps"`` for the
    gufunc's parameters; None for its own stack; ``_UNSEEN`` otherwise."""
    return _base_slot(_strip_gep(ptr), set())


def _base_slot(base: SSAValue, seen: set):
    if isinstance(base, BlockArgument):
        block = base.block
        if block is block.parent.blocks[0]:
            return ("dims", "steps", "data")[base.index] if base.index < 3 else base.index - 3
        # a pointer advanced per row (strength reduction): the slot its incoming values agree on
        if base in seen:
            return None
        seen.add(base)
        keys = set()
        for pred in block.predecessors():
            term = pred.last_op
            for k, succ in enumerate(term.successors):
                if succ is block:
                    found = _base_slot(_strip_gep(LLVM.successor_operands(term)[k][base.index]), seen)
                    if found is not None:
                        keys.add(found)
        return keys.pop() if len(keys) == 1 else _UNSEEN
    return None if memory_kind(base.owner) == "alloca" else _UNSEEN


def _strip_gep(v: SSAValue) -> SSAValue:
    while not isinstance(v, BlockArgument) and isinstance(v.owner, llvm.GEPOp):
        v = v.owner.operands[0]
    return v


# ---------------------------------------------------------------------- atomics
def needs_atomic_add(gen, load: Operation) -> bool:
    """Whether the reverse of ``load`` in the derivative of parfor ``gen.fop`` must add
    its adjoint atomically (module docstring)."""
    table = gen.__dict__.get("_parfor_accesses")
    if table is None:
        table = gen._parfor_accesses = [_indexed(gen, op.ptr) for b in gen.p.region.blocks for op in b.ops
                                        if memory_kind(op) in ("load", "store") and op.ptr in gen.act.shadowed]
    key, iv = _indexed(gen, load.ptr)
    if key is None:
        return False  # the thread's own stack
    if iv is None or not isinstance(key, int):
        return True
    return any(k is _UNSEEN or (k == key and i is not iv) for k, i in table)


def _indexed(gen, ptr: SSAValue):
    """(slot of ``ptr``, the parfor induction variable indexing it or None)."""
    from zymase.autodiff.forwarding import _address

    key = slot_of(ptr)
    found = _address(ptr)
    if found is None or found[1] is None:
        return key, None
    index = found[1][1]
    return key, (index if _is_row_index(gen, index) else None)


def _is_row_index(gen, v: SSAValue) -> bool:
    """``v`` is a loop header's argument that starts at the ``start`` of the row (the
    first word of the schedule's row, slot 0, in a 1-D schedule) and that every back
    edge advances by a nonzero constant."""
    from zymase.autodiff.parallel import _constant, _strip

    if not isinstance(v, BlockArgument):
        return False
    loops = dict(gen.cfg.natural_loops())
    body = loops.get(v.block)
    if body is None or not _one_dimensional(gen):
        return False
    for e in gen.cfg.preds[v.block]:
        value = _strip(gen.flavor.successor_operands(e.src.last_op)[e.slot][v.index])
        op = None if isinstance(value, BlockArgument) else value.owner
        if e.src not in body:
            if not isinstance(op, llvm.LoadOp) or not _row_word(op.ptr, 0):
                return False
        elif not isinstance(op, (llvm.AddOp, llvm.SubOp)) or _strip(op.operands[0]) is not v or _constant(
                op.operands[1]) in (None, 0):
            return False
    return True


def _row_word(ptr: SSAValue, offset: int) -> bool:
    from zymase.autodiff.forwarding import _address

    found = _address(ptr)
    return found is not None and found[1] is None and found[2] == offset and slot_of(found[0]) == 0


def _one_dimensional(gen) -> bool:
    """Every read of the schedule is the row's ``start`` or ``end`` (bytes 0 and 8)."""
    from zymase.autodiff.forwarding import _address

    for b in gen.p.region.blocks:
        for op in b.ops:
            if isinstance(op, llvm.LoadOp) and slot_of(op.ptr) == 0:
                found = _address(op.ptr)
                if found is None or found[1] is not None or found[2] not in (0, 8):
                    return False
    return True


def in_parfor(gen) -> bool:
    """Whether ``gen`` generates a derivative of a parfor gufunc."""
    return is_parfor(gen.fop)
