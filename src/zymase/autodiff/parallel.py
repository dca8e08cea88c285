"""Which adjoint updates in the reverse sweep of an OpenMP parallel region must be atomic.

Every thread of a reverse region (transforms/openmp.py) adds the adjoints of what its
iterations read into shadow memory. An add into memory another thread may update at the
same time races, so it is an ``atomicrmw fadd``, unless the analysis shows the target
belongs to one iteration (hence to one thread, whose iterations are its own under a
static schedule) or to the thread:

- memory the region allocates itself (its stack, its mallocs) is the thread's;
- ``base[iv]`` is the iteration's when ``iv`` is (a cast of) the induction variable of a
  worksharing loop (it starts at the lower bound ``__kmpc_for_static_init_*`` gave the
  thread and steps by a nonzero constant), ``base`` is a captured array (a pointer reached
  from the region's parameters through loads, the same in every iteration), and every
  other access of the region to that array uses the same index ``iv``: a loop reading
  ``x[i]`` and writing ``out[i]`` gets plain adds; one that also reads ``x[i-1]`` or
  ``x[i+1]`` (a stencil), a loop nested in the worksharing loop (``x[j]``), or a shared
  scalar gets atomic adds.

Distinct captured arrays are taken not to overlap partially (``x`` and ``x + 1`` passed
as two arrays), as the primal region would race on them too if one were written.
"""

from __future__ import annotations

from zymase.analysis.memory import memory_kind
from zymase.ir import BlockArgument, Operation, SSAValue, llvm

_CASTS = (llvm.SExtOp, llvm.ZExtOp, llvm.TruncOp)


def needs_atomic_add(gen, load: Operation) -> bool:
    """Whether the reverse of ``load`` (in the derivative ``gen`` generates) must add its
    adjoint atomically."""
    from zymase.transforms.openmp import is_outlined_region

    if not is_outlined_region(gen.fop):
        return False
    table = getattr(gen, "_parallel_accesses", None)
    if table is None:
        table = gen._parallel_accesses = _accesses(gen)
    key, iv = _access(gen, load.ptr)
    if key == "private":
        return False
    if iv is None or key is None:
        return True
    return any(other_key is None or (other_key == key and other_iv is not iv) for other_key, other_iv in table)


def _accesses(gen) -> list[tuple]:
    """(array key, index) of every load and store of the region through a shadowed pointer."""
    out = []
    for b in gen.p.region.blocks:
        for op in b.ops:
            if memory_kind(op) in ("load", "store") and op.ptr in gen.act.shadowed:
                out.append(_access(gen, op.ptr))
    return [(k, iv) for k, iv in out if k != "private"]


def _access(gen, ptr: SSAValue):
    """(key of the array ``ptr`` points into, or None when unknown, or ``"private"`` for
    memory of the region's own; the worksharing induction variable indexing it, or None)."""
    index = None
    owner = ptr.owner if not isinstance(ptr, BlockArgument) else None
    if isinstance(owner, llvm.GEPOp) and len(owner.operands) == 2:
        index = _strip(owner.operands[1])
        ptr = owner.operands[0]
    base = ptr
    while not isinstance(base, BlockArgument) and isinstance(base.owner, llvm.GEPOp):
        index = None  # a second level of addressing: not one element per iteration
        base = base.owner.operands[0]
    if not isinstance(base, BlockArgument) and memory_kind(base.owner) in ("alloca", "malloc", "calloc"):
        return "private", None
    key = _key(base)
    if index is not None and not _is_induction(gen, index):
        index = None
    return key, index


def _key(p: SSAValue, depth: int = 0):
    """A name for the object ``p`` is: a parameter, or the pointer loaded from one."""
    if isinstance(p, BlockArgument):
        return ("arg", p.index) if p.block is p.block.parent.blocks[0] else None
    op = p.owner
    if depth < 4 and isinstance(op, llvm.LoadOp):
        inner = _key(op.ptr, depth + 1)
        return ("load", inner) if inner is not None else None
    if isinstance(op, llvm.AddressOfOp):
        return ("global", op.global_name.root_reference.data)
    return None


def _strip(v: SSAValue) -> SSAValue:
    """``v`` without integer casts and the ``0 + 1 * i`` clang writes at -O0."""
    while not isinstance(v, BlockArgument):
        op = v.owner
        if isinstance(op, _CASTS):
            v = op.operands[0]
        elif isinstance(op, (llvm.AddOp, llvm.MulOp)):
            unit = 0 if isinstance(op, llvm.AddOp) else 1
            rest = [o for o in op.operands if _constant(o) != unit]
            if len(rest) != 1:
                return v
            v = rest[0]
        else:
            return v
    return v


def _constant(v: SSAValue):
    op = None if isinstance(v, BlockArgument) else v.owner
    return op.value.value.data if isinstance(op, llvm.ConstantOp) and hasattr(op.value, "value") else None


def _is_induction(gen, v: SSAValue) -> bool:
    """``v`` is the induction variable of a worksharing loop: a loop header's argument
    that starts at the lower bound ``__kmpc_for_static_init_*`` gave the thread and that
    every back edge advances by a nonzero constant. (A loop every thread runs in full,
    or one nested in the worksharing loop, shares its iterations between threads.)"""
    if not isinstance(v, BlockArgument):
        return False
    loops = dict(gen.cfg.natural_loops())
    body = loops.get(v.block)
    if body is None:
        return False
    lower_bounds = _lower_bounds(gen)
    for e in gen.cfg.preds[v.block]:
        if e.src not in body:
            start = _strip(gen.flavor.successor_operands(e.src.last_op)[e.slot][v.index])
            if not isinstance(start.owner, llvm.LoadOp) or start.owner.ptr not in lower_bounds:
                return False
            continue
        nxt = _strip(gen.flavor.successor_operands(e.src.last_op)[e.slot][v.index])
        op = None if isinstance(nxt, BlockArgument) else nxt.owner
        if not isinstance(op, (llvm.AddOp, llvm.SubOp)) or _strip(op.operands[0]) is not v:
            return False
        if _constant(op.operands[1]) in (None, 0):
            return False
    return True


_STATIC_INIT = ("__kmpc_for_static_init_4", "__kmpc_for_static_init_4u", "__kmpc_for_static_init_8",
                "__kmpc_for_static_init_8u")


def _lower_bounds(gen) -> set[SSAValue]:
    """The pointers through which the region's static schedules return a thread's first iteration."""
    found = getattr(gen, "_parallel_lower_bounds", None)
    if found is None:
        from zymase.analysis.memory import callee_name

        found = gen._parallel_lower_bounds = {
            op.operands[4] for b in gen.p.region.blocks for op in b.ops
            if isinstance(op, llvm.CallOp) and callee_name(op) in _STATIC_INIT}
    return found
