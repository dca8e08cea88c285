"""Control-flow facts of one function body: edges, predecessors, dominators, cycles.

Edges are kept per successor slot (a terminator may target one block twice with
different operands), which the reverse sweep needs to route adjoints of block
arguments back along the edge that was really taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zymase.ir import Block, Operation, Region


@dataclass(frozen=True)
class Edge:
    """The ``slot``-th successor of ``src``'s terminator, leading to ``dst``."""

    src: Block
    slot: int
    dst: Block


@dataclass
class CFG:
    region: Region
    blocks: list[Block]
    preds: dict[Block, list[Edge]] = field(default_factory=dict)
    succs: dict[Block, list[Edge]] = field(default_factory=dict)
    idom: dict[Block, Block | None] = field(default_factory=dict)
    in_cycle: set[Block] = field(default_factory=set)

    @staticmethod
    def build(region: Region) -> "CFG":
        blocks = list(region.blocks)
        cfg = CFG(region, blocks)
        cfg._edges()
        cfg._dominators()
        cfg._cycles()
        return cfg

    @staticmethod
    def edges_only(region: Region) -> "CFG":
        """The edges (``preds``, ``succs``) without dominators and cycles, for a pass that
        needs no more (``transforms/alias_scopes``: they were 2-3 ms of its 14 on hand)."""
        cfg = CFG(region, list(region.blocks))
        cfg._edges()
        return cfg

    def _edges(self) -> None:
        for b in self.blocks:
            self.preds[b] = []
            self.succs[b] = []
        for b in self.blocks:
            term = b.last_op
            if term is None:
                continue
            for slot, s in enumerate(term.successors):
                e = Edge(b, slot, s)
                self.succs[b].append(e)
                self.preds[s].append(e)

    def terminator(self, b: Block) -> Operation:
        assert b.last_op is not None
        return b.last_op

    def rpo(self) -> list[Block]:
        """Blocks reachable from the entry, in reverse post-order."""
        seen: set[Block] = set()
        order: list[Block] = []
        entry = self.blocks[0]
        stack: list[tuple[Block, int]] = [(entry, 0)]
        seen.add(entry)
        while stack:
            b, i = stack.pop()
            succ = [e.dst for e in self.succs[b]]
            if i < len(succ):
                stack.append((b, i + 1))
                s = succ[i]
                if s not in seen:
                    seen.add(s)
                    stack.append((s, 0))
            else:
                order.append(b)
        order.reverse()
        return order

    def _dominators(self) -> None:
        """Cooper-Harvey-Kennedy iterative dominators over reverse post-order."""
        rpo = self.rpo()
        self.reachable = set(rpo)
        index = {b: i for i, b in enumerate(rpo)}
        entry = rpo[0]
        idom: dict[Block, Block | None] = {entry: entry}

        def intersect(a: Block, b: Block) -> Block:
            while a is not b:
                while index[a] > index[b]:
                    a = idom[a]  # type: ignore[assignment]
                while index[b] > index[a]:
                    b = idom[b]  # type: ignore[assignment]
            return a

        changed = True
        while changed:
            changed = False
            for b in rpo[1:]:
                new = None
                for e in self.preds[b]:
                    p = e.src
                    if p in idom and p in index:
                        new = p if new is None else intersect(p, new)
                if new is not None and idom.get(b) is not new:
                    idom[b] = new
                    changed = True
        idom[entry] = None
        self.idom = idom

    def dominates(self, a: Block, b: Block) -> bool:
        """Whether ``a`` is ``b`` or on its chain of immediate dominators (an unreachable
        block dominates only itself). Answered from the dominator tree's pre-order
        numbers in constant time: a walk up the chain per query made the loop and
        availability queries of a long -O0 function quadratic."""
        if a is b:
            return True
        numbers = self.__dict__.get("_tree_numbers")
        if numbers is None:
            numbers = self._tree_numbers = self._number_dominator_tree()
        at, below = numbers.get(a, (-1, -1)), numbers.get(b)
        return below is not None and at[0] < below[0] <= at[1]

    def _number_dominator_tree(self) -> dict[Block, tuple[int, int]]:
        """Each block of the dominator tree: its pre-order number and the largest number
        in its subtree (its dominated blocks are those numbered in between)."""
        children: dict[Block, list[Block]] = {}
        roots: list[Block] = []
        for b, parent in self.idom.items():
            if parent is None:
                roots.append(b)
            else:
                children.setdefault(parent, []).append(b)
        numbers: dict[Block, tuple[int, int]] = {}
        first: dict[Block, int] = {}
        count = 0
        for root in roots:
            stack: list[tuple[Block, bool]] = [(root, False)]
            while stack:
                b, done = stack.pop()
                if done:
                    numbers[b] = (first[b], count - 1)
                    continue
                first[b] = count
                count += 1
                stack.append((b, True))
                stack.extend((c, False) for c in children.get(b, ()))
        return numbers

    def in_order(self, blocks: set[Block]) -> list[Block]:
        """``blocks`` in the function's block order. A set of blocks iterates in the
        order of their ids, which differ from run to run: anything that creates IR or
        picks the first match while walking a loop body walks it in this order, so
        that the output does not depend on where Python placed the objects."""
        return [b for b in self.blocks if b in blocks]

    def exit_edges(self, body: set[Block]) -> list[Edge]:
        """The edges leaving loop ``body``, in block order."""
        return [e for b in self.in_order(body) for e in self.succs[b] if e.dst not in body]

    def natural_loops(self) -> list[tuple[Block, set[Block]]]:
        """(header, body) of each natural loop (back edges to one header merged)."""
        if hasattr(self, "_loops"):
            return self._loops
        loops: dict[Block, set[Block]] = {}
        for b in self.blocks:
            if b not in self.reachable:
                continue
            for e in self.succs[b]:
                h = e.dst
                if not self.dominates(h, b):
                    continue
                body = loops.setdefault(h, {h})
                work = [b]
                while work:
                    x = work.pop()
                    if x in body:
                        continue
                    body.add(x)
                    work.extend(p.src for p in self.preds[x] if p.src in self.reachable)
        self._loops = list(loops.items())
        return self._loops

    @property
    def irreducible(self) -> bool:
        """Whether some cycle is not a natural loop (a loop with two entries: ``goto``
        into its body). Its blocks may run many times per call although no natural
        loop holds them. The CFG is reducible when it is acyclic once the back edges
        (to a block that dominates their source) are removed."""
        if not hasattr(self, "_irreducible"):
            state: dict[Block, int] = {}  # 1: on the DFS path, 2: done
            found = False
            for root in self.blocks[:1]:
                work: list[tuple[Block, int]] = [(root, 0)]
                state[root] = 1
                while work and not found:
                    b, i = work.pop()
                    succ = [e.dst for e in self.succs[b] if not self.dominates(e.dst, b)]
                    if i < len(succ):
                        work.append((b, i + 1))
                        s = succ[i]
                        if state.get(s) == 1:
                            found = True
                        elif s not in state:
                            state[s] = 1
                            work.append((s, 0))
                        continue
                    state[b] = 2
            self._irreducible = found
        return self._irreducible

    def _cycles(self) -> None:
        """Blocks on some cycle (Tarjan's strongly connected components)."""
        index: dict[Block, int] = {}
        low: dict[Block, int] = {}
        on_stack: set[Block] = set()
        stack: list[Block] = []
        counter = [0]
        for root in self.blocks:
            if root in index:
                continue
            work: list[tuple[Block, int]] = [(root, 0)]
            index[root] = low[root] = counter[0]
            counter[0] += 1
            stack.append(root)
            on_stack.add(root)
            while work:
                b, i = work.pop()
                succ = [e.dst for e in self.succs[b]]
                if i < len(succ):
                    work.append((b, i + 1))
                    s = succ[i]
                    if s not in index:
                        index[s] = low[s] = counter[0]
                        counter[0] += 1
                        stack.append(s)
                        on_stack.add(s)
                        work.append((s, 0))
                    elif s in on_stack:
                        low[b] = min(low[b], index[s])
                    continue
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[b])
                if low[b] == index[b]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.append(x)
                        if x is b:
                            break
                    if len(comp) > 1 or any(e.dst is b for e in self.succs[b]):
                        self.in_cycle.update(comp)
