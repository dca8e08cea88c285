"""Which edge entered a block, and where its adjoints go back (a mixin of
``reverse.ReverseGenerator``).

A forward block with several live predecessors gets an i32 argument naming the edge
it was entered by; the reverse sweep needs that index to route the adjoints of the
block's arguments back to the operands of the edge taken. The index is rebuilt from a
branch condition when the CFG's shape allows, kept in an indexed cache (one byte per
iteration) inside loop nests with known trip counts, and otherwise pushed on a stack of
its own, or set in a slot when the block runs at most once per call (counted loop headers
count down instead: counted_loops.py). The generator's
state (``cfg``, ``E``, ``bmap``, ``rev``, caches) is the generator's own.
"""

from __future__ import annotations

from zymase.analysis.cfg import Edge
from zymase.autodiff.tape import explain_tape, restore_op, save_op
from zymase.ir import Block, Operation, SSAValue, i8, i32, llvm
from zymase.ir import enzyme as ez


class TakenEdges:
    def _add_edge_indices(self, region) -> None:
        """Give each forward block with several live predecessors an i32 argument
        naming the incoming edge, and push it on that block's cache."""
        flavor = self.flavor
        new_operands: dict[Operation, list[list[SSAValue]]] = {}
        for b in region.blocks:
            shadowed = [i for i, a in enumerate(b.args) if b is not region.blocks[0] and self.act.has_shadow(a)]
            if not shadowed:
                continue
            for e in self.cfg.preds[b]:
                src_term = e.src.last_op
                term = self.bmap[e.src].last_op
                ops = new_operands.setdefault(term, flavor.successor_operands(term))
                self.E.before(term)
                primal_ops = flavor.successor_operands(src_term)[e.slot]
                # a shadow per lane for each shadowed argument (the order of their block arguments)
                if e.src in self.cfg.reachable:
                    extra = [self.shadow_of(primal_ops[i]) for i in shadowed for _ in self.each_lane()]
                else:  # never runs: any pointer will do
                    extra = [self.E.v(llvm.ZeroOp.build(result_types=[b.args[i].type]))
                             for i in shadowed for _ in range(self.width)]
                ops[e.slot] = ops[e.slot] + extra
        for b in self.multi:
            nb = self.bmap[b]
            if b in self.counted:
                self._add_iteration_counter(b, nb, new_operands)
                continue
            idx = nb.insert_arg(i32, len(nb.args))
            for k, e in enumerate(self.in_edges[b]):
                term = self.bmap[e.src].last_op
                ops = new_operands.setdefault(term, flavor.successor_operands(term))
                self.E.before(term)
                ops[e.slot] = ops[e.slot] + [self.E.iconst(k, i32)]
            # Edges from dead blocks still need an operand.
            for e in self.cfg.preds[b]:
                if e.src not in self.live:
                    term = self.bmap[e.src].last_op
                    ops = new_operands.setdefault(term, flavor.successor_operands(term))
                    self.E.before(term)
                    ops[e.slot] = ops[e.slot] + [self.E.iconst(0, i32)]
            self.edge_index[b] = idx
            if self.split:
                # the global tape: pushed now, in program order with everything else
                push = ez.PushOp(self._tape_at(i32, nb, nb.first_op), idx)
                nb.insert_op_after(push, nb.first_op)
        for term, ops in new_operands.items():
            new = flavor.rebuild_terminator(term, ops)
            term.parent_block().insert_op_before(new, term)
            term.parent_block().erase_op(term)

    def _edge_taken(self, b: Block) -> SSAValue:
        """In the reverse of block ``b`` (several predecessors, not a counted loop
        header): the index of the edge the forward sweep entered ``b`` by. Inside a
        nest of loops with known trip counts it is kept in an indexed cache (one byte
        per iteration, no call); elsewhere on a LIFO stack of its own."""
        idx = self.edge_index[b]
        if self.split:
            return self.E.v(ez.PopOp(self._tape_at(i32, self.E.block, None)))
        again = self._edge_from_branch(b)
        if again is not None:
            return again
        if len(self.in_edges[b]) <= 256 and self._nest_of(b) is not None:
            nb = self.bmap[b]
            saved = (self.E.block, self.E.anchor)
            self.E.before(nb.last_op)
            small = self.E.v(llvm.TruncOp(idx, i8))
            self.E.block, self.E.anchor = saved
            return self.E.v(llvm.ZExtOp(self._indexed_cache(small), i32))
        once = self._once_per_call(b)
        explain_tape(self.fname, idx, "edge taken, slot once per call" if once else "edge taken, stack")
        cache = self._new_cache(i32, once=once)
        nb = self.bmap[b]
        push = save_op(cache, idx)
        if nb.first_op is None:
            nb.add_op(push)
        else:
            nb.insert_op_before(push, nb.first_op)
        return self.E.v(restore_op(cache))

    def _edge_from_branch(self, b: Block) -> SSAValue | None:
        """The edge ``b`` was entered by, from a branch condition instead of a record:
        ``b`` has two predecessors, ``x`` branches either straight to ``b`` or to a
        successor from which ``x`` cannot be reached again without passing ``b`` (a
        loop that may be skipped: the inner loop of a triangular nest), ``x``
        dominates the other predecessor, and ``b`` cannot be entered again without
        passing ``x`` (a loop with two entries, ``goto`` into its body, enters ``b``
        straight from ``x`` once and around on later turns: the last decision of ``x``
        would name the first edge every time). The last decision of ``x`` then names the
        edge, and its condition is usually rebuilt for free (a compare of induction
        variables). None when the shape does not hold."""
        if self.flavor.name != "llvm":
            return None
        edges = self.in_edges[b]
        if len(edges) != 2:
            return None
        for k, direct in enumerate(edges):
            x, around = direct.src, edges[1 - k]
            term = x.last_op
            if not isinstance(term, llvm.CondBrOp) or term.successors[0] is term.successors[1]:
                continue
            away = term.successors[1 - direct.slot]
            if away is x or not self.cfg.dominates(x, around.src) or self._reaches_avoiding(away, x, b):
                continue
            if any(self._reaches_avoiding(e.dst, b, x) for e in self.cfg.succs[b]):
                continue
            cond = self._fetch(term.cond, self.vmap.get(term.cond, term.cond))
            # slot 0 is the true successor
            if_true, if_false = (k, 1 - k) if direct.slot == 0 else (1 - k, k)
            return self.E.select(cond, self.E.iconst(if_true, i32), self.E.iconst(if_false, i32))
        return None

    def _reaches_avoiding(self, src: Block, dst: Block, avoid: Block) -> bool:
        """Whether a path from ``src`` reaches ``dst`` without passing ``avoid``."""
        seen, work = set(), [src]
        while work:
            blk = work.pop()
            if blk is dst:
                return True
            if blk in seen or blk is avoid:
                continue
            seen.add(blk)
            work.extend(e.dst for e in self.cfg.succs[blk])
        return False

    def _route_edge(self, e: Edge, arg_adj: list[SSAValue | None]) -> None:
        """Add block-argument adjoints to the operands passed along edge ``e``, then
        continue in the reverse block of the predecessor."""
        term = e.src.last_op
        operands = self.flavor.successor_operands(term)[e.slot]
        for i, val in enumerate(operands):
            for lane in self.each_lane():
                d = arg_adj[i * self.width + lane]
                if d is not None:
                    self._accumulate(val, d)
        if e in self._last_iteration:
            self.E.insert(ez.SetOp(*self._last_iteration.pop(e)))
        br = self.E.insert(self.flavor.br(self.rev[e.src], []))
        self._route_points[e] = br
        self._emit_edge_pops(e, self._edge_pops.get(e, []))
