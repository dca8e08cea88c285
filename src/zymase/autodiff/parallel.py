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

A stencil's atomics are needed only at the edges of a thread's chunk. In a reverse sweep
that can read the schedule's bounds again (a combined derivative, whose stack is the
forward sweep's: ``autodiff/region_recompute.py``), when every access of the region to
the array is ``a[iv + d]`` (constant ``d``, the same worksharing loop of an unchunked
static schedule, elements of the access's size), the element ``a[iv + c]`` is touched
only by the iterations ``iv + c - d``; if all of them lie in the thread's chunk
``[lower, upper]`` no other thread touches it. Such a loop is split beforehand into its
chunk's edges and interior (``transforms/omp_chunks.py``): the interior copy's adds into
the stencil's arrays are plain (``chunk_interior_spread``), the edge copies' atomic. A
loop the split does not take gets the test per add: ``interior_test`` gives it, and
``emit_adjoint_add`` adds plainly when it holds and atomically at the chunk's edges (a
helper with both paths, inlined by LLVM).
"""

from __future__ import annotations

from dataclasses import dataclass

from zymase.analysis.memory import memory_kind
from zymase.autodiff.module_symbols import find_symbol
from zymase.ir import BlockArgument, IntegerAttr, IntegerType, Operation, SSAValue, llvm, parse_mlir

_CASTS = (llvm.SExtOp, llvm.ZExtOp, llvm.TruncOp)


def needs_atomic_add(gen, load: Operation) -> bool:
    """Whether the reverse of ``load`` (in the derivative ``gen`` generates) must add its
    adjoint atomically."""
    from zymase.transforms.numba_parfor import is_parfor
    from zymase.transforms.openmp import is_outlined_region

    if is_parfor(gen.fop):
        from zymase.autodiff import numba_parfor  # a Numba prange loop

        return numba_parfor.needs_atomic_add(gen, load)
    if not is_outlined_region(gen.fop):
        return False
    table = getattr(gen, "_parallel_accesses", None)
    if table is None:
        table = gen._parallel_accesses = _accesses(gen)
    key, iv = _access(gen, load.ptr)
    if key == "private" or chunk_interior_spread(gen, load) is not None:
        return False
    if iv is None or key is None:
        return True
    return any(other_key is None or (other_key == key and other_iv is not iv) for other_key, other_iv in table)


def chunk_interior_spread(gen, load: Operation) -> int | None:
    """When ``load`` reads ``a[iv + c]`` in the interior copy of a split worksharing loop
    (``transforms/omp_chunks.py``: ``iv`` is at least ``spread`` from both ends of the
    thread's chunk), and every access of the region to ``a`` is ``a[iv' + d]``, ``iv'``
    one of that loop's three copies, with ``max d - min d <= spread``, no iteration
    outside the chunk touches the element: returns ``max d - min d`` for ``a`` (0 for
    a map's array), else None."""
    memo = gen.__dict__.setdefault("_chunk_interior", {})
    if load not in memo:
        memo[load] = _chunk_interior_spread(gen, load)
    return memo[load]


def _chunk_interior_spread(gen, load: Operation) -> int | None:
    splits = gen.p.chunk_splits
    if not splits:
        return None
    found = _element_of(gen, load.ptr, set(splits))
    if found is None:
        return None
    key, iv, size, _ = found
    split = splits[iv]
    offsets = set()
    for b in gen.p.region.blocks:
        for op in b.ops:
            if memory_kind(op) not in ("load", "store") or op.ptr not in gen.act.shadowed:
                continue
            other = _element_of(gen, op.ptr, set(split.ivs))
            if other is None:
                if _access(gen, op.ptr)[0] in (key, None):
                    return None  # an access this test does not place
                continue
            if other[0] != key:
                continue
            typ = op.results[0].type if isinstance(op, llvm.LoadOp) else op.value.type
            if other[2] != size or _size_of(typ) != size or (other[3] - found[3]) % size:
                return None
            offsets.add(other[3])
    spread = (max(offsets) - min(offsets)) // size
    return spread if spread <= split.spread else None


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


_UNCHUNKED_STATIC = 34
"""``kmp_sch_static``: one contiguous chunk per thread, bounds fixed for the whole loop."""
_SIGNED_STATIC_INIT = ("__kmpc_for_static_init_4", "__kmpc_for_static_init_8")


@dataclass(frozen=True)
class InteriorTest:
    """A load's adjoint may be added without atomics when ``lower <= iv + low`` and
    ``iv + high <= upper``, the thread's chunk being ``[*lower_ptr, *upper_ptr]``."""

    iv: SSAValue
    low: int
    high: int
    lower_ptr: SSAValue
    upper_ptr: SSAValue


def interior_test(gen, load: Operation) -> InteriorTest | None:
    """The chunk-interior test of the reverse of ``load`` (module docstring), or None
    when the adjoint must always be added atomically."""
    if gen.split:
        return None  # the reverse function's frame is not the forward sweep's: no bounds to read
    found = _element(gen, load.ptr)
    if found is None:
        return None
    key, iv, size, offset = found
    offsets = set()
    for b in gen.p.region.blocks:
        for op in b.ops:
            if memory_kind(op) not in ("load", "store") or op.ptr not in gen.act.shadowed:
                continue
            other = _element(gen, op.ptr)
            if other is None:
                if _access(gen, op.ptr)[0] in (key, None):
                    return None
                continue
            if other[0] != key:
                continue
            typ = op.results[0].type if isinstance(op, llvm.LoadOp) else op.value.type
            if other[1] is not iv or other[2] != size or _size_of(typ) != size or (other[3] - offset) % size:
                return None
            offsets.add(other[3])
    init = _static_init_of(gen, iv)
    if init is None:
        return None
    return InteriorTest(iv, (offset - max(offsets)) // size, (offset - min(offsets)) // size,
                        init.operands[4], init.operands[5])


def _element(gen, ptr: SSAValue):
    """``(array key, iv, element size, byte offset)`` when ``ptr`` is ``base + size*(iv + k) + c``
    with ``iv`` a worksharing induction variable and ``base`` a captured array."""
    return _element_of(gen, ptr, None)


def _element_of(gen, ptr: SSAValue, ivs: set | None):
    """``_element``, with ``iv`` one of ``ivs`` instead (when given) of a worksharing
    induction variable."""
    from zymase.autodiff.forwarding import _address

    found = _address(ptr)
    if found is None or found[1] is None:
        return None
    base, (size, index), c = found
    iv, k = _plus_constant(index)
    if not (iv in ivs if ivs is not None else _is_induction(gen, iv)):
        return None
    key = _key(base)
    if key is None:
        return None
    return key, iv, size, size * k + c


def _induction_plus(gen, v: SSAValue):
    """``(iv, k)`` when ``v`` is the worksharing induction variable ``iv`` plus the
    constant ``k`` (through casts and no-wrap adds), else ``(None, 0)``."""
    iv, k = _plus_constant(v)
    return (iv, k) if _is_induction(gen, iv) else (None, 0)


def _plus_constant(v: SSAValue):
    """``(x, k)`` when ``v`` is ``x`` plus the constant ``k`` (through casts and no-wrap adds)."""
    from zymase.ir.llvm_ext import NSW, overflow_bits

    k = 0
    while True:
        v = _strip(v)
        op = None if isinstance(v, BlockArgument) else v.owner
        if isinstance(op, (llvm.AddOp, llvm.SubOp)) and overflow_bits(op) & NSW and _constant(op.operands[1]) is not None:
            k += _constant(op.operands[1]) * (1 if isinstance(op, llvm.AddOp) else -1)
            v = op.operands[0]
            continue
        return v, k


def signed_static_init(gen, iv: BlockArgument) -> Operation | None:
    """The signed ``__kmpc_for_static_init_*`` call (any chunk) whose lower-bound slot
    the worksharing loop ``iv`` starts from (``gen``: anything with ``cfg``, ``flavor``
    and ``p.region``)."""
    from zymase.analysis.memory import callee_name

    loops = dict(gen.cfg.natural_loops())
    body = loops[iv.block]
    for e in gen.cfg.preds[iv.block]:
        if e.src in body:
            continue
        start = _strip(gen.flavor.successor_operands(e.src.last_op)[e.slot][iv.index])
        for b in gen.p.region.blocks:
            for op in b.ops:
                if (isinstance(op, llvm.CallOp) and callee_name(op) in _SIGNED_STATIC_INIT
                        and op.operands[4] is start.owner.ptr):
                    return op
    return None


def _static_init_of(gen, iv: BlockArgument):
    """The unchunked, signed ``__kmpc_for_static_init_*`` call whose lower bound ``iv`` starts at."""
    op = signed_static_init(gen, iv)
    if op is None:
        return None
    # the reverse reads the bounds back from their slots: no other loop may reuse them
    inits = [u.operation for p in (op.operands[4], op.operands[5]) for u in p.uses
             if isinstance(u.operation, llvm.CallOp) and u.operation is not op]
    return op if _constant(op.operands[2]) == _UNCHUNKED_STATIC and not inits else None


def _size_of(t) -> int | None:
    from zymase.analysis.types import size_align

    try:
        return size_align(t)[0]
    except Exception:  # a type without a fixed size: no element to speak of
        return None


def emit_adjoint_add(gen, ptr: SSAValue, dy: SSAValue, test: InteriorTest | None) -> Operation:
    """Add ``dy`` into shadow memory ``ptr`` atomically, or, with ``test``, plainly inside
    the thread's chunk and atomically at its edges; returns the op that adds."""
    from zymase.autodiff.memory import MONOTONIC
    from zymase.ir import llvm_ext

    E = gen.E
    if test is None:
        return E.insert(llvm_ext.AtomicRMWOp("fadd", ptr, dy, MONOTONIC))
    iv = gen.primal(test.iv)
    bounds = []
    for p in (test.lower_ptr, test.upper_ptr):
        bound = E.v(llvm.LoadOp(gen.primal(p), _bound_type(test)))
        if bound.type != iv.type:
            bound = E.v(llvm.SExtOp(bound, iv.type) if bound.type.width.data < iv.type.width.data
                        else llvm.TruncOp(bound, iv.type))
        bounds.append(bound)
    first = E.v(llvm.AddOp(iv, E.v(llvm.ConstantOp(IntegerAttr(test.low, iv.type), iv.type))))
    last = E.v(llvm.AddOp(iv, E.v(llvm.ConstantOp(IntegerAttr(test.high, iv.type), iv.type))))
    below = E.v(llvm.ICmpOp(first, bounds[0], IntegerAttr(2, IntegerType(64))))  # slt
    above = E.v(llvm.ICmpOp(last, bounds[1], IntegerAttr(4, IntegerType(64))))  # sgt
    shared = E.v(llvm.OrOp(below, above))
    name = _edge_add_helper(gen.ctx.module, dy.type)
    return E.insert(llvm.CallOp(name, ptr, dy, shared))


def _bound_type(test: InteriorTest):
    """The bounds' width: ``__kmpc_for_static_init_4`` writes i32, ``_8`` i64."""
    from zymase.analysis.memory import callee_name

    for use in test.lower_ptr.uses:
        name = callee_name(use.operation) if isinstance(use.operation, llvm.CallOp) else None
        if name in _SIGNED_STATIC_INIT:
            return IntegerType(32 if name.endswith("_4") else 64)
    raise AssertionError("a chunk bound without its static_init call")


def _edge_add_helper(module, t) -> str:
    """``__zymase_omp_add.<t>(ptr, value, shared)``: an atomic add if ``shared``, else a
    plain one (internal, always inlined), defined once per module and type."""
    name = f"__zymase_omp_add.{t}"
    if find_symbol(module, name) is not None:
        return name
    align = _size_of(t)
    text = f"""builtin.module {{
  llvm.func internal @"{name}"(%p: !llvm.ptr, %v: {t}, %shared: i1) attributes {{passthrough = ["alwaysinline"]}} {{
    llvm.cond_br %shared, ^edge, ^inside
  ^edge:
    %old = llvm.atomicrmw fadd %p, %v monotonic {{alignment = {align} : i64}} : !llvm.ptr, {t}
    llvm.return
  ^inside:
    %x = llvm.load %p {{alignment = {align} : i64}} : !llvm.ptr -> {t}
    %s = llvm.fadd %x, %v : {t}
    llvm.store %s, %p {{alignment = {align} : i64}} : {t}, !llvm.ptr
    llvm.return
  }}
}}"""
    (fn,) = list(parse_mlir(text).body.block.ops)
    fn.detach()
    module.body.block.add_op(fn)
    return name
