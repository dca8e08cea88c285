"""Split an OpenMP worksharing loop into its chunk's edges and interior, so that the
reverse sweep of a recomputed region adds a stencil's adjoints without atomics or
branches in the interior.

A thread of an unchunked static schedule runs the iterations ``[lower, upper]`` of its
chunk. A stencil reading ``a[i + d]`` (``d`` in ``[dmin, dmax]``) adds adjoints into
elements another thread's iterations may touch only from the first and last
``E = dmax - dmin`` iterations of the chunk; an iteration ``i`` with
``lower + E <= i <= upper - E`` touches elements that no iteration outside
``[lower, upper]`` touches (``autodiff/parallel.py`` says which adds may then be plain).
Testing that per add puts a branch in every iteration, and LLVM does not vectorize the
loop. Here, on the private copy of the region whose combined reverse derivative is being
generated (``common.prepare``), the loop becomes three copies of itself run one after
the other over ``[start, a)``, ``[a, b)`` and ``[b, end)``, with

    a = min(max(lower + E, start), end),  b = min(max(upper + 1 - E, a), end)

(``start`` and ``end`` the loop's own first iteration and one past its last, from its
exact trip count, ``analysis/trip_count``): the middle copy runs only interior
iterations, each copy is a counted loop of its own (``iv + 1 == bound`` leaves it), and
the engine reverses each with its usual machinery. The first and last copies' adds stay
atomic (their induction variables do not start at the schedule's lower bound).

What is split: a natural loop whose header has one argument, a worksharing induction
variable of an unchunked signed static schedule (``parallel._is_induction``,
``_static_init_of``) of type i64 stepping by one without wrapping; one latch that is
also the only exit, leaving with no operands; an exact trip count; no value of the loop
used after it; and a float load ``a[iv + d]`` of a captured array at two offsets or more
(``E > 0``; at most ``MAX_SPREAD``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from types import SimpleNamespace

from zymase.analysis.cfg import CFG
from zymase.analysis.memory import memory_kind
from zymase.analysis.trip_count import SGT, SLT, EQ, emit_trip_count, trip_count
from zymase.ir import Block, BlockArgument, IntegerAttr, IntegerType, Operation, Region, SSAValue, i64, is_float_type, llvm
from zymase.ir import llvm_ext
from zymase.ir.llvm_ext import overflow_bits
from zymase.llvm.noalias_scopes import freshen_scopes

_copies = itertools.count()

MAX_SPREAD = 64
"""Stencils wider than this many elements are left with the per-add test."""


@dataclass(frozen=True)
class ChunkSplit:
    """The three copies of one worksharing loop: ``ivs`` are their induction variables
    (edge, interior, edge); the interior copy runs only iterations at least ``spread``
    from both ends of the thread's chunk."""

    ivs: tuple[BlockArgument, BlockArgument, BlockArgument]
    spread: int

    @property
    def interior(self) -> BlockArgument:
        return self.ivs[1]


def _view(region: Region, flavor) -> SimpleNamespace:
    """What the schedule analyses of ``autodiff/parallel.py`` read of a generator (its
    ``cfg``, ``flavor`` and ``p.region``), for a region not yet being differentiated."""
    return SimpleNamespace(cfg=CFG.build(region), flavor=flavor, p=SimpleNamespace(region=region))


def split_worksharing_loops(region: Region, flavor, module: Operation) -> dict[BlockArgument, ChunkSplit]:
    """Split the worksharing loops of outlined region ``region`` that qualify (module
    docstring); returns the splits by the interior copy's induction variable."""
    out: dict[BlockArgument, ChunkSplit] = {}
    done: set[Block] = set()
    while True:
        view = _view(region, flavor)
        for header, body in view.cfg.natural_loops():
            if header in done:
                continue
            done.add(header)
            split = _split(view, header, body, module)
            if split is not None:
                out[split.interior] = split
                done.update(iv.block for iv in split.ivs)
                break  # the CFG changed
        else:
            return out


def _split(view: SimpleNamespace, h: Block, body: set[Block], module) -> ChunkSplit | None:
    from zymase.autodiff.parallel import _static_init_of, _is_induction

    cfg, flavor = view.cfg, view.flavor
    if len(h.args) != 1 or h.args[0].type != i64 or not _is_induction(view, h.args[0]):
        return None
    iv = h.args[0]
    entries = [e for e in cfg.preds[h] if e.src not in body]
    latches = [e for e in cfg.preds[h] if e.src in body]
    exits = [e for b in body for e in cfg.succs[b] if e.dst not in body]
    if len(entries) != 1 or len(latches) != 1 or len(exits) != 1 or exits[0].src is not latches[0].src:
        return None
    entry, latch, exit_edge = entries[0], latches[0], exits[0]
    term = latch.src.last_op
    if not isinstance(term, llvm.CondBrOp) or flavor.successor_operands(term)[exit_edge.slot]:
        return None
    tc = trip_count(cfg, h, body, entry, latch, flavor.successor_operands)
    if tc is None or not tc.exact(exits) or tc.step != 1:
        return None
    nxt = flavor.successor_operands(term)[latch.slot][0]
    if isinstance(nxt, BlockArgument) or not overflow_bits(nxt.owner):
        return None
    for b in body:
        for v in [*b.args, *(r for op in b.ops for r in op.results)]:
            if any(u.operation.parent_block() not in body for u in v.uses):
                return None
    spread = _spread(view, iv, body)
    init = _static_init_of(view, iv)
    if not spread or spread > MAX_SPREAD or init is None:
        return None
    return _rewrite(view, h, body, entry, latch, exit_edge, tc, nxt, init, spread, module)


def _spread(view: SimpleNamespace, iv: BlockArgument, body: set[Block]) -> int:
    """The widest stencil ``a[iv + d]`` the loop reads floats with: ``max d - min d``
    over the loads of each captured array (0 when no array is read at two offsets)."""
    from zymase.autodiff.parallel import _element

    offsets: dict = {}
    for b in body:
        for op in b.ops:
            if memory_kind(op) != "load" or not is_float_type(op.results[0].type):
                continue
            found = _element(view, op.ptr)
            if found is None or found[1] is not iv:
                continue
            key, _, size, offset = found
            offsets.setdefault((key, size), set()).add(offset)
    return max(((max(o) - min(o)) // size for (_, size), o in offsets.items()), default=0)


def _rewrite(view, h, body, entry, latch, exit_edge, tc, nxt, init, spread, module) -> ChunkSplit:
    from zymase.autodiff.flavor import Emitter

    region, flavor, cfg = view.p.region, view.flavor, view.cfg
    term = latch.src.last_op
    loc = term.location
    exit_block = exit_edge.dst

    # the guard of the first copy computes where the copies meet
    start_block = Block()
    E = Emitter(flavor, module).at_end(start_block)
    start = flavor.successor_operands(entry.src.last_op)[entry.slot][0]

    def outside(v: SSAValue) -> SSAValue:
        # a constant the reader placed in the loop
        return E.v(v.owner.clone()) if not isinstance(v, BlockArgument) and v.owner.parent_block() in body else v

    count = emit_trip_count(E, tc, outside)
    end = E.v(llvm.AddOp(start, count))
    lower, upper = (_bound(E, init.operands[k], init) for k in (4, 5))

    def clamp(v: SSAValue, lo: SSAValue, hi: SSAValue) -> SSAValue:
        v = E.v(llvm_ext.SelectOp(E.v(llvm_ext.ICmpOp(v, lo, IntegerAttr(SLT, i64))), lo, v))
        return E.v(llvm_ext.SelectOp(E.v(llvm_ext.ICmpOp(v, hi, IntegerAttr(SGT, i64))), hi, v))

    a = clamp(E.v(llvm.AddOp(lower, E.iconst(spread, i64))), start, end)
    b = clamp(E.v(llvm.SubOp(upper, E.iconst(spread - 1, i64))), a, end)

    order = [x for x in cfg.rpo() if x in body]
    guards = [start_block, Block(), Block()]
    copies = []
    for k, (lo, hi) in enumerate(((start, a), (a, b), (b, end))):
        after = guards[k + 1] if k < 2 else exit_block
        bmap = {x: Block(arg_types=[arg.type for arg in x.args]) for x in order}
        vmap: dict[SSAValue, SSAValue] = {}
        for x in order:
            vmap.update(zip(x.args, bmap[x].args))
        for x in order:
            new = bmap[x]
            for op in x.ops:
                if op is term:
                    break
                new.add_op(op.clone(value_mapper=vmap, block_mapper=bmap))
            if x is not latch.src:
                continue
            Ek = Emitter(flavor, module).at_end(new)
            done = Ek.v(llvm_ext.ICmpOp(vmap[nxt], hi, IntegerAttr(EQ, i64)))
            br = llvm.CondBrOp(done, after, [], bmap[h], [vmap[nxt]])
            br.location = loc
            new.add_op(br)
        freshen_scopes([op for x in order for op in bmap[x].ops], f"chunk{next(_copies)}", declared_only=True)
        # a copy runs only if its range is not empty
        G = guards[k]
        runs = Emitter(flavor, module).at_end(G).v(llvm_ext.ICmpOp(lo, hi, IntegerAttr(SLT, i64)))
        br = llvm.CondBrOp(runs, bmap[h], [lo], after, [])
        G.add_op(br)
        for op in G.ops:
            op.location = loc
        copies.append((G, [bmap[x] for x in order], bmap[h].args[0]))

    # the entry edge now leads to the first guard
    src = entry.src
    ops = flavor.successor_operands(src.last_op)
    ops[entry.slot] = []
    old = src.last_op
    new_term = flavor.rebuild_terminator(old, ops)
    new_term.successors = [start_block if j == entry.slot else s for j, s in enumerate(old.successors)]
    src.insert_op_before(new_term, old)
    src.erase_op(old)

    anchor = h
    for G, blocks, _ in copies:
        region.insert_block_after([G, *blocks], anchor)
        anchor = blocks[-1]
    for x in order:  # the original loop, now unreachable
        for op in x.ops:
            op.drop_all_references()
    for x in order:
        region.erase_block(x, safe_erase=False)
    return ChunkSplit(tuple(iv for _, _, iv in copies), spread)


def _bound(E, slot: SSAValue, init: Operation) -> SSAValue:
    """The chunk bound the schedule stored in ``slot``, as an i64."""
    from zymase.analysis.memory import callee_name

    width = 32 if callee_name(init).endswith("_4") else 64
    v = E.v(llvm.LoadOp(slot, IntegerType(width)))
    return v if width == 64 else E.v(llvm.SExtOp(v, i64))
