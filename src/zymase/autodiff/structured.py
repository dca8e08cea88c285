"""Reverse mode at the structured level (Enzyme-MLIR style): for a ``func.func``
whose body is one block holding ``scf.for`` / ``scf.if`` / ``scf.while`` regions.

Layout of the generated function ``G`` (a single block, like the primal)::

    caches and accumulators (enzyme.init)
    the primal ops, copied in order; region ops rebuilt by their rules
    seeds of the returned values' adjoints
    the reverse of every op, last to first; region ops reversed by their rules
    return primal results and derivatives

The region rules (rules/scf.py) decide what each structured op becomes; this
class supplies what they share: the primal copy of an op (``forward_op``), the
reverse of a block's ops (``reverse_ops``), and *frames* — a reverse block that
mirrors one forward block. A primal value the reverse needs is read directly when
it is computed in the function's top block (it dominates the whole reverse
sweep), rematerialized when it is a constant, rebuilt from the reverse counter
when it is the induction variable of the loop being reversed, and otherwise
pushed on an ``!enzyme.Cache`` right after its definition in the forward copy and
popped at the head of the reverse block mirroring its block (once per execution
of that block, so the LIFO order matches). ``remove-unnecessary-enzyme-ops``
(transforms/enzyme_cleanup.py) then turns these caches into SSA values or
``memref`` buffers indexed by the iteration.

Adjoints live in SSA values inside their block; a value used in another block
(inside a nested region) gets an ``enzyme.init`` accumulator, reset after it is
taken when it is defined inside a region. ``remove-unnecessary-enzyme-ops``
(transforms/promote_gradients.py) turns these accumulators into values carried
by the scf ops (iter_args, scf.if results).

Vector mode (``width`` N > 1, autodiff/lanes.py): shadows, cells and frame-local
adjoints exist once per lane; each op's reverse is emitted once per lane, while the
forward sweep, the values fetched for the reverse (frame values, keyed by value) and
the tape are shared by the lanes.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

from zymase.analysis.memory import memory_kind
from zymase.autodiff.common import no_rule_error, prepare
from zymase.autodiff.flavor import STD, Emitter
from zymase.autodiff.reverse import ReverseGenerator
from zymase.analysis.scf import nested_blocks
from zymase.analysis.memref import memref_roots, memref_writes
from zymase.ir import Block, BlockArgument, OpClasses, Operation, SSAValue, memref
from zymase.ir import enzyme as ez

# (named: the C and Numba paths do not import the func dialect, zymase/ir/on_first_use.py)
_FUNC = OpClasses("func.FuncOp")


def is_structured(fop: Operation) -> bool:
    """A func.func of one block holding region-carrying ops (scf): differentiated
    by :class:`StructuredReverse` instead of the CFG generator."""
    if not isinstance(fop, _FUNC) or len(fop.body.blocks) != 1:
        return False
    return any(op.regions for op in fop.body.block.ops)


@dataclass
class Frame:
    """A reverse block ``rb`` mirroring forward (primal) block ``fwd``; values popped
    for it go to its head (after ``head``; None: the start of ``rb``)."""

    fwd: Block
    rb: Block
    head: Operation | None
    loop: tuple | None = None  # (op, lb, step, n, k) when ``rb`` reverses an scf.for body
    values: dict = field(default_factory=dict)  # forward value -> value usable in rb


class StructuredReverse(ReverseGenerator):
    # ------------------------------------------------------------------ generate
    def generate(self, gop: Operation) -> None:
        flavor = self.flavor
        p = prepare(self.ctx, self.fop, self.arg_acts, self.ret_acts)
        self.p = p
        self.cfg = p.cfg
        self.act = act = p.activity
        self.body = body = p.region.blocks[0]
        self.E = E = Emitter(flavor, self.ctx.module)
        entry = gop.body.blocks[0]
        self.g_entry = entry
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.rev_arg_of: dict = {}
        self.while_counts: dict[Operation, SSAValue] = {}
        self.frames: list[Frame] = []
        self.dealloc_copies: dict[Operation, Operation] = {}  # primal dealloc -> its forward copy
        self.deferred_deallocs: dict[Operation, None] = {}  # (ordered: reproducible output)
        # The per-lane maps (shadows, adjoint cells, block-local adjoints: one set
        # per lane in vector mode, autodiff/lanes.py) start empty.
        for lane_map in ("smap", "alloc_shadows", "cells", "local"):
            self.reset_lanes(lane_map)
        g_args = iter(entry.args)
        for arg, a in zip(body.args, self.arg_acts):
            self.vmap[arg] = next(g_args)
            if a.is_dup:
                for _ in self.each_lane():
                    shadow = next(g_args)
                    if act.has_shadow(arg):
                        self.smap[arg] = shadow
        # per result, its seed in each lane
        seeds = [[next(g_args) for _ in range(self.width)] if a.is_active else None for a in self.ret_acts]

        # Accumulators for adjoints that cross block boundaries.
        for b in nested_blocks(p.region):
            for v in (*b.args, *(r for op in b.ops for r in op.results)):
                if act.is_active(v) and self._needs_cell(v):
                    for _ in self.each_lane():
                        self.cells[v] = E.at_end(entry).v(ez.InitOp(ez.GradientType(v.type)))

        # Forward sweep.
        E.at_end(entry)
        for op in list(body.ops)[:-1]:
            self.forward_op(op)
        ret = body.last_op
        returned = flavor.return_values(ret)
        self.primal_outputs = [self.vmap.get(v, v) for v, a in zip(returned, self.ret_acts) if a.needs_primal]

        # Reverse sweep, starting from the seeds of the returned values.
        with self.frame(body, entry):
            for v, lane_seeds in zip(returned, seeds):
                if lane_seeds is not None and act.is_active(v):
                    for lane in self.each_lane():
                        self._accumulate(v, lane_seeds[lane])
            self.reverse_ops(body)
            self.rounded_partials.finish()
            derivs = []
            for arg, a in zip(body.args, self.arg_acts):
                if a.is_active:
                    for _ in self.each_lane():
                        d = self._take_adjoint(arg)
                        derivs.append(d if d is not None else E.zero(arg.type))
            flavor.ret(E, self.primal_outputs + derivs, None)
        self._defer_deallocs(entry.last_op)

    # ------------------------------------------------------------------ forward sweep
    def forward_op(self, op: Operation) -> None:
        """Copy primal op ``op`` at the emitter (region ops: by their rule), with the
        shadow side of memory ops."""
        if op.regions:
            self.region_rule(op).forward_sweep(self, op)
            return
        clone = self.copy_op(op)
        if isinstance(op, memref.DeallocOp):
            self.dealloc_copies[op] = clone
        if memory_kind(op) is not None:
            saved = (self.E.block, self.E.anchor)
            self.E.before(clone.next_op) if clone.next_op is not None else self.E.at_end(clone.parent_block())
            for _ in self.each_lane():
                self.shadow_structure(op, clone, forward_mode=False)
            self.E.block, self.E.anchor = saved

    def fwd(self, v: SSAValue) -> SSAValue:
        """The forward sweep's copy of primal value ``v``."""
        return self.vmap.get(v, v)

    def copy_op(self, op: Operation) -> Operation:
        clone = op.clone(self.vmap)
        self.E.insert(clone)
        return clone

    def region_rule(self, op: Operation):
        from zymase.autodiff.rules.scf import RegionRule

        rule = self.ctx.rule_for(op)
        if not isinstance(rule, RegionRule):
            raise no_rule_error(op, self.fname)
        return rule

    def region_active(self, op: Operation) -> bool:
        """Whether a region op has derivative work: an active value or a touch of
        shadowed memory inside, or active results. Others stay primal only."""
        act = self.act
        if any(act.is_active(r) for r in op.results):
            return True
        for inner in op.walk():
            if inner is op:
                continue
            if any(act.is_active(r) for r in inner.results) or any(o in act.shadowed for o in inner.operands):
                return True
            if inner in act.shadow_allocations:
                return True
            for region in inner.regions:
                for b in region.blocks:
                    if any(act.is_active(a) for a in b.args):
                        return True
        for region in op.regions:
            for b in region.blocks:
                if any(act.is_active(a) for a in b.args):
                    return True
        return False

    # ------------------------------------------------------------------ reverse sweep
    @contextmanager
    def frame(self, fwd: Block, rb: Block, loop: tuple | None = None):
        """Emit, at the end of ``rb``, code that mirrors forward block ``fwd``."""
        saved = (self.E.block, self.E.anchor, self.of_every_lane("local"))
        self.E.at_end(rb)
        self.reset_lanes("local")
        self.frames.append(Frame(fwd, rb, rb.last_op, loop))
        try:
            yield self.frames[-1]
        finally:
            self.frames.pop()
            self.E.block, self.E.anchor = saved[:2]
            self.reset_lanes("local", saved[2])

    def reverse_ops(self, block: Block) -> None:
        """The reverse of ``block``'s ops, last to first; its terminator is the
        caller's (the parent op's rule, or the seeding of returned values)."""
        for op in reversed(list(block.ops)[:-1]):
            if op.regions:
                if self.region_active(op):
                    self.region_rule(op).reverse_region(self, op)
            elif memory_kind(op) is not None:
                for _ in self.each_lane():
                    self.reverse_memory(op)
            elif self.act.op_is_active(op):
                if self.width > 1 and self.ctx.defined_function(op) is not None:
                    self._reverse_call_lanes(op, self.ctx.defined_function(op))
                else:
                    for _ in self.each_lane():
                        self._reverse_op(op)

    # ------------------------------------------------------------------ adjoints
    def _home(self, v: SSAValue) -> Block:
        return v.block if isinstance(v, BlockArgument) else v.owner.parent_block()

    def _needs_cell(self, v: SSAValue) -> bool:
        home = self._home(v)
        return any(u.operation.parent_block() is not home for u in v.uses)

    def _in_cycle(self, v: SSAValue) -> bool:
        # a value defined inside a region is defined again on every run of the region
        return self._home(v) is not self.body

    # ------------------------------------------------------------------ primal values
    def _fetch(self, v: SSAValue | None, w: SSAValue, home: Block | None = None, *, recompute: bool = True) -> SSAValue:
        """Forward value ``w`` (the copy of primal ``v``, or a value computed in primal
        block ``home``) made usable at the emitter in the reverse sweep."""
        E = self.E
        if home is None:
            home = self._home(v)
        if home is self.body:
            return w  # computed once, before the whole reverse sweep
        cur = self.frames[-1]
        if not isinstance(w, BlockArgument) and STD.is_constant(w.owner):
            if w not in cur.values:
                # at the head of the reverse block: the first use may be emitted
                # there later (a recompute for a value popped at the head)
                cur.values[w] = self._at_head(cur, lambda: E.v(w.owner.clone()))
            return cur.values[w]
        frame = self._frame_of(home)
        if frame is None:
            raise AssertionError(f"zymase bug: {w} is not available in the reverse sweep")
        if w in frame.values:
            return frame.values[w]
        if frame.loop is not None and v is not None and v is frame.loop[0].body.block.args[0]:
            from zymase.autodiff.rules.scf import reverse_iv

            value = self._at_head(frame, lambda: reverse_iv(E, frame.loop))
        else:
            value = (self._recompute(v, w) if v is not None and recompute else None) or self._tape(frame, w)
        frame.values[w] = value
        return value

    def _frame_of(self, home: Block) -> Frame | None:
        return next((f for f in reversed(self.frames) if f.fwd is home), None)

    # ------------------------------------------------------------------ recompute, not tape
    # The min-cut of tape.MinCutRecompute (what may run again: _recomputable_std), with
    # what is free here: values of the top block, constants, the induction variables of
    # the loops being reversed and values a frame already has.
    def _free_in_reverse(self, v: SSAValue, w: SSAValue) -> bool:
        if not isinstance(w, BlockArgument) and STD.is_constant(w.owner):
            return True
        home = self._home(v)
        if home is self.body:
            return True
        frame = self._frame_of(home)
        if frame is None:
            return False
        return w in frame.values or (frame.loop is not None and v is frame.loop[0].body.block.args[0])

    def _memref_unchanged_after(self, load: Operation) -> bool:
        """Whether no op that may write what ``load`` reads runs after the top-level op
        holding it (the forward sweep is done with that memory once past it). A
        buffer's dealloc is the exception when both it and the allocation are at the
        top level: it is deferred to the end of the reverse sweep (``_defer_deallocs``)."""
        roots = memref_roots(load.memref, self.body)
        if roots is None:
            return False
        if not hasattr(self, "_writes"):
            self._writes = memref_writes(self.p.region)
        at = self._top_index(load)
        deferred = []
        for w, written in self._writes:
            if written is not None and not any(self._may_share(r, x) for r in roots for x in written):
                continue
            if self._top_index(w) < at:
                continue
            if (isinstance(w, memref.DeallocOp) and w.parent_block() is self.body and written is not None
                    and all(isinstance(r, memref.AllocOp) and r.parent_block() is self.body for r in written)):
                deferred.append(w)
                continue
            return False
        self.deferred_deallocs.update(dict.fromkeys(deferred))
        return True

    def _top_index(self, op: Operation) -> int:
        """The position in the function's top block of the op that is or holds ``op``."""
        if not hasattr(self, "_top_positions"):
            self._top_positions = {o: i for i, o in enumerate(self.body.ops)}
        while op.parent_block() is not self.body:
            op = op.parent_op()
        return self._top_positions[op]

    def _defer_deallocs(self, ret: Operation) -> None:
        """Move the forward copies of the deallocs the reverse sweep read past to just
        before the return ``ret``."""
        for op in self.deferred_deallocs:
            clone = self.dealloc_copies[op]
            clone.detach()
            ret.parent_block().insert_op_before(clone, ret)

    def _hoist_loop(self, v: SSAValue):
        return None  # a value of an outer loop's body is popped once per outer iteration already

    def _rebuild(self, v: SSAValue, w: SSAValue, cut: set[SSAValue], top: bool = False) -> SSAValue:
        """``w`` computed again at the head of the frame mirroring its block, from
        operands rebuilt the same way, fetched, or (those in ``cut``) taped."""
        if not top:
            if w in cut:
                return self._fetch(v, w, recompute=False)
            if self._free_in_reverse(v, w) or not self._recomputable(v, w):
                return self._fetch(v, w)
        frame = self._frame_of(self._home(v))
        if w in frame.values:
            return frame.values[w]
        operands = [self._rebuild(ov, ow, cut) for ov, ow in zip(v.owner.operands, w.owner.operands)]
        clone = w.owner.clone({}, {})
        clone.operands = operands
        value = self._at_head(frame, lambda: self.E.v(clone))
        frame.values[w] = value
        return value

    def _at_head(self, frame: Frame, build) -> SSAValue:
        """Run ``build()`` with the emitter at the head of ``frame``'s block."""
        E = self.E
        saved = (E.block, E.anchor)
        rb = frame.rb
        anchor = frame.head.next_op if frame.head is not None else rb.first_op
        if anchor is None:
            E.at_end(rb)
        else:
            E.before(anchor)
        value = build()
        frame.head = value.owner
        E.block, E.anchor = saved
        return value

    def _tape(self, frame: Frame, w: SSAValue) -> SSAValue:
        """Push ``w`` right after its definition in the forward copy; pop it at the
        head of the reverse block ``frame``."""
        tapes = self.__dict__.setdefault("_tapes", {})
        if w not in tapes:
            # One cache per forward value: a block reversed in two places (an
            # scf.while's ``before``) pops each of its runs from the same stack.
            cache = ez.InitOp(ez.CacheType(w.type))
            self.g_entry.insert_op_before(cache, self.g_entry.first_op)
            tapes[w] = cache.results[0]
            push = ez.PushOp(cache.results[0], w)
            if isinstance(w, BlockArgument):
                blk = w.block
                if blk.first_op is None:
                    blk.add_op(push)
                else:
                    blk.insert_op_before(push, blk.first_op)
            else:
                w.owner.parent_block().insert_op_after(push, w.owner)
        return self._at_head(frame, lambda: self.E.v(ez.PopOp(tapes[w])))
