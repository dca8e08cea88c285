"""Counted loops in the reverse sweep (a mixin of ``reverse.ReverseGenerator``).

A loop header entered by exactly one edge from outside and one back edge, whose
iterations can be counted, is reversed by counting its iterations down instead of
taping which edge was taken in every iteration; its induction variables are rebuilt from
the count instead of being taped (tape model: docs/architecture.md section 5, step 3).
The generator's state (``cfg``, ``E``, ``counted``, caches) is the generator's own.
"""

from __future__ import annotations

from zymase.analysis.cfg import Edge
from zymase.ir import (Block, BlockArgument, IndexType, IntegerAttr, IntegerType, OpClasses, Operation, SSAValue, arith,
                       i64, llvm)
from zymase.ir import enzyme as ez
from zymase.ir import fast_ops
from zymase.analysis.op_classes import is_a

# integer additions and subtractions of both flavors (an induction variable's step)
_INT_ADD = OpClasses(llvm.AddOp, "arith.AddiOp")
_INT_SUB = OpClasses(llvm.SubOp, "arith.SubiOp")


class CountedLoops:
    def _counted_loops(self) -> dict:
        """Loop headers entered by exactly one edge from outside and one back edge:
        the reverse sweep runs such a loop by counting iterations down, and rebuilds
        induction variables from the count (no per-iteration tape for either)."""
        if self.split:
            return {}
        out = {}
        for header, body in self.cfg.natural_loops():
            if header not in self.multi:
                continue
            edges = self.in_edges[header]
            entry = [e for e in edges if e.src not in body]
            latch = [e for e in edges if e.src in body]
            if len(entry) != 1 or len(latch) != 1 or len(edges) != 2:
                continue
            exits = [e for e in self.cfg.exit_edges(body) if e.src in self.live]
            out[header] = {"entry": entry[0], "latch": latch[0], "body": body, "exits": exits}
        return out

    def _add_iteration_counter(self, h: Block, nh: Block, new_operands) -> None:
        """Forward: an i64 block argument k of the header (0 on entry, k + 1 on the back
        edge). Reverse: a slot holding the iteration being reversed."""
        info = self.counted[h]
        flavor = self.flavor
        k = nh.insert_arg(i64, len(nh.args))
        info["k"] = k
        slot = ez.InitOp(ez.GradientType(i64))
        self.g_entry.add_op(slot)
        info["slot"] = slot.results[0]
        for e in self.cfg.preds[h]:
            term = self.bmap[e.src].last_op
            ops = new_operands.setdefault(term, flavor.successor_operands(term))
            self.E.before(term)
            if e == info["latch"]:
                value = self.E.iadd(k, self.E.iconst(1, i64))
            else:
                value = self.E.iconst(0, i64)
            ops[e.slot] = ops[e.slot] + [value]

    def _exact_count(self, h: Block):
        """The trip count of counted loop ``h`` when it is exact (see
        TripCount.exact): the reverse sweep then computes the number of the last
        iteration from the loop's start and bound instead of taping it."""
        if self.split or self.flavor.name != "llvm":
            return None
        tc = self._trip_count(h)
        exits = self.counted[h]["exits"]
        if tc is None or not tc.exact(exits):
            return None
        # the reverse sweep reads start and bound where it leaves the loop's exit:
        # they must be defined on every path there (a bound computed in a guarded
        # preheader is not, but the value it widens usually is)
        for v in tc.operands():
            if self._widened_from(v, exits[0].dst) is None:
                return None
        return tc

    def _widened_from(self, v: SSAValue, where: Block):
        """(x, casts): ``v`` is integer casts ``casts`` (innermost last) of a value ``x``
        defined on every path to ``where``; None if there is no such ``x``."""
        casts = []
        while True:
            home = v.block if is_a(v, BlockArgument) else v.owner.parent_block()
            if self.cfg.dominates(home, where) or self._is_constant_value(v):
                return v, casts
            if isinstance(v, BlockArgument) or not isinstance(v.owner, (llvm.ZExtOp, llvm.SExtOp, llvm.TruncOp)):
                return None
            casts.append(v.owner)
            v = v.owner.operands[0]

    def _count_operand(self, v: SSAValue, where: Block) -> SSAValue:
        """Trip-count operand ``v`` in the reverse of ``where``: the value it widens,
        fetched, and widened again (without the flags the guarded copy could assume)."""
        x, casts = self._widened_from(v, where)
        w = self._fetch(x, self.vmap.get(x, x))
        for op in reversed(casts):
            w = self.E.v(type(op)(w, op.results[0].type))
        return w

    def _exact_counts_into(self, edges: list[Edge]) -> None:
        """In the reverse of a block, before it branches on the edge it was entered
        by: for each of ``edges`` that leaves a loop with an exact count, the number
        of that loop's last iteration (computed here, where it dominates every edge's
        branch; the edge's branch stores it into the loop's slot, see _route_edge)."""
        for e in edges:
            for h, info in self.counted.items():
                if info["exits"] == [e] and (tc := self._exact_count(h)) is not None:
                    n = self._emit_trip_count(tc, lambda v: self._count_operand(v, e.dst))
                    self._last_iteration[e] = (info["slot"], self.E.isub(n, self.E.iconst(1, i64)))

    def _iteration(self, h: Block) -> SSAValue:
        """In the reverse of loop ``h``'s body: the index of the iteration being reversed."""
        return self.E.v(ez.GetOp(self.counted[h]["slot"]))

    def _header_flow(self, v: SSAValue):
        """For a header argument ``v`` of a counted loop around the current block:
        (the loop's info, the value its back edge passes, the value its entry passes).
        Otherwise None."""
        if not is_a(v, BlockArgument) or v.block not in self.counted:
            return None
        info = self.counted[v.block]
        if self.cur not in info["body"]:
            return None
        latch, entry = info["latch"], info["entry"]
        nxt = self.flavor.successor_operands(latch.src.last_op)[latch.slot][v.index]
        init = self.flavor.successor_operands(entry.src.last_op)[entry.slot][v.index]
        return info, nxt, init

    def _induction_step(self, v: SSAValue):
        """For a header argument ``v`` of a counted loop around the current block that
        moves by the same step each iteration (``v + c``, ``v - c``, or a pointer
        ``gep v[c]``; ``c`` a constant or a value fixed during the loop's run) from a
        start value the reverse sweep can get without a per-iteration tape: (info,
        next-value op, init). Otherwise None."""
        flow = self._header_flow(v)
        if flow is None:
            return None
        info, nxt, init = flow
        op = None if is_a(nxt, BlockArgument) else nxt.owner
        if op is None or not op.operands or op.operands[0] is not v:
            return None
        if isinstance(v.type, (IntegerType, IndexType)) and isinstance(op, _INT_ADD + _INT_SUB):
            steps = [op.operands[1]]
        elif isinstance(op, llvm.GEPOp) and len(op.rawConstantIndices.get_values()) == 1:
            steps = list(op.operands[1:])  # one index: a constant, or a constant SSA value
        else:
            return None
        # the step may be any value fixed during a run of the loop (``s += len``): the
        # reverse sweep reads it once per run, like the start
        if not all(self._fixed_per_run(s, info["body"]) for s in steps + [init]):
            return None
        return info, op, init

    def _fixed_per_run(self, v: SSAValue, body: set[Block]) -> bool:
        """A constant, or a value defined outside loop ``body`` that the reverse sweep
        can get without a per-iteration tape of it."""
        if self._is_constant_value(v):
            return True
        home = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
        return home not in body and (self._available(v) or self._outside_inner_loop(v))

    def _shadow_steps_with(self, w: SSAValue, op: Operation, info) -> bool:
        """Whether the forward shadow phi ``w`` advances by the same GEP as its primal."""
        latch = info["latch"]
        term = self.bmap[latch.src].last_op
        nxt = self.flavor.successor_operands(term)[latch.slot][w.index]
        sop = None if isinstance(nxt, BlockArgument) else nxt.owner
        return (
            isinstance(sop, llvm.GEPOp) and sop.operands[0] is w and sop.elem_type == op.elem_type
            and sop.rawConstantIndices == op.rawConstantIndices
            and all(self.vmap.get(a, a) is b for a, b in zip(op.operands[1:], sop.operands[1:]))
        )

    def _lagged_induction(self, v: SSAValue):
        """For a header argument ``v`` of a counted loop around the current block whose
        back edge passes another argument ``u`` of the same header that is an induction
        variable (``for (i = 0; i + 1 < n; i++)`` after LLVM's optimizations: ``i``
        takes the value ``i + 1`` had, one iteration late): (u, init of v) when the
        reverse sweep can get v's start without a per-iteration tape. Otherwise None."""
        flow = self._header_flow(v)
        if flow is None:
            return None
        info, u, init = flow
        if not (is_a(u, BlockArgument) and u.block is v.block and u is not v):
            return None
        found = self._induction_step(u)
        if found is None or not isinstance(found[1], _INT_ADD + _INT_SUB):
            return None
        if not self._fixed_per_run(init, info["body"]):
            return None
        return u, init

    def _can_rebuild_induction(self, v: SSAValue, w: SSAValue) -> bool:
        if self._lagged_induction(v) is not None and w is self.vmap.get(v, v):
            return True
        found = self._induction_step(v)
        if found is None:
            return False
        info, op, _ = found
        if w is self.vmap.get(v, v):
            return True
        return w is self.smap.get(v) and isinstance(op, llvm.GEPOp) and self._shadow_steps_with(w, op, info)

    def _induction(self, v: SSAValue, w: SSAValue) -> SSAValue | None:
        """Rebuild a counted loop's induction variable ``v = init + k * step`` (or the
        pointer ``&init[k * step]``) from the iteration index, instead of taping it.
        ``w`` is the forward value wanted: ``v``'s copy, or its shadow (a pointer
        whose shadow moves in step with it)."""
        if not self._can_rebuild_induction(v, w):
            return None
        k = self._iteration(v.block)
        lagged = self._lagged_induction(v)
        if lagged is not None and w is self.vmap.get(v, v):
            # v in iteration k is u's value in iteration k - 1, and v's start in
            # iteration 0 (at k = 0 the other arm is u's value before its start,
            # which the select discards; LLVM folds it when the starts line up)
            u, init = lagged
            E = self.E
            before = self._induction_at(u, self.vmap.get(u, u), E.isub(k, E.iconst(1, i64)))
            start = self._fetch(init, self.vmap.get(init, init))
            return E.select(E.icmp_eq(k, E.iconst(0, i64)), start, before)
        return self._induction_at(v, w, k)

    def _induction_at(self, v: SSAValue, w: SSAValue, k: SSAValue) -> SSAValue:
        """Induction variable ``v`` (or the shadow ``w`` that moves with it) in
        iteration ``k`` of its loop: ``init + k * step`` (``&init[k * step]``)."""
        info, op, init = self._induction_step(v)
        E = self.E
        if w is self.vmap.get(v, v):
            start = self._fetch(init, self.vmap.get(init, init))
        else:
            start = self.fetch_shadow(init)
        if isinstance(op, llvm.GEPOp):
            raw = op.rawConstantIndices.get_values()[0]
            if op.operands[1:]:
                step = self._fetch(op.operands[1], self.vmap.get(op.operands[1], op.operands[1]))
                if step.type != i64:
                    step = E.v(llvm.SExtOp(step, i64))
            else:
                step = E.v(llvm.ConstantOp(IntegerAttr(raw, i64), i64))
            offset = E.v(llvm.MulOp(k, step))
            return E.v(llvm.GEPOp(start, [llvm.GEP_USE_SSA_VAL], op.elem_type, ssa_indices=[offset]))
        w_step = self._fetch(op.operands[1], self.vmap.get(op.operands[1], op.operands[1]))
        if self.flavor.name == "llvm":
            if v.type != i64:
                k = E.v(llvm.TruncOp(k, v.type))
            scaled = E.v(fast_ops.int_arith(llvm.MulOp, k, w_step))
            return E.v(fast_ops.int_arith(llvm.AddOp if isinstance(op, llvm.AddOp) else llvm.SubOp, start, scaled))
        if isinstance(v.type, IndexType):
            k = E.v(arith.IndexCastOp(k, v.type))
        elif v.type != i64:
            k = E.v(arith.TruncIOp(k, v.type))
        scaled = E.v(arith.MuliOp(k, w_step))
        return E.v(arith.AddiOp(start, scaled) if isinstance(op, arith.AddiOp) else arith.SubiOp(start, scaled))

    def _count_down(self, h: Block, arg_adj: list[SSAValue | None]) -> None:
        """Reverse of a counted loop header: iteration 0 leaves through the entry
        edge, any other goes to the previous iteration's back edge (counting down;
        make_ascending may turn the count around afterwards, see autodiff/ascending.py)."""
        info = self.counted[h]
        E = self.E
        k = self._iteration(h)
        first = E.icmp_eq(k, E.iconst(0, i64))
        active_pos = [i for i, d in enumerate(arg_adj) if d is not None]
        vals = [arg_adj[i] for i in active_pos]
        entry_b = Block(arg_types=[v.type for v in vals])
        latch_b = Block(arg_types=[v.type for v in vals])
        rb = self.rev[h]
        rb.parent.insert_block_after([entry_b, latch_b], rb)
        E.insert(self.flavor.cond_br(first, entry_b, vals, latch_b, vals))
        for e, eb in ((info["entry"], entry_b), (info["latch"], latch_b)):
            E.at_end(eb)
            if eb is latch_b:
                step = E.isub(k, E.iconst(1, i64))
                self._count_ops[h] = (first.owner, step.owner, E.insert(ez.SetOp(info["slot"], step)))
            adj = [None] * len(arg_adj)
            for i, ba in zip(active_pos, eb.args):
                adj[i] = ba
            self._route_edge(e, adj)
