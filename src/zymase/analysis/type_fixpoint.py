"""Type analysis's fixpoint: runs the deduction rules of a function to the fixpoint, in
one calling context, and summarises callees for their callers.

:class:`Shared` is the state of one ``analyze_types`` call (the module's functions
and globals, the rule graph of each function, callee summaries by calling context);
:class:`Analyzer` is one worklist run of a function's rules. A rule is re-run when a
value it reads changes; every change is a join, so trees only grow and the run ends
(offsets are bounded by ``MAX_OFFSET``, depth by ``MAX_DEPTH``; cycles of constant
offsets are made periodic before the run, in :class:`type_deductions.RuleGraph`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from zymase.analysis.op_classes import is_a
from zymase.analysis.type_deductions import RET, RuleGraph, is_ptr
from zymase.analysis.type_tree import EMPTY, MAX_DEPTH, TypeTree, join, truncate
from zymase.ir import ModuleOp, Operation, llvm

__all__ = ["Shared", "Analyzer", "MAX_CALL_DEPTH", "MAX_CONTEXTS", "module_has_tbaa"]

#: Nesting of context-sensitive callee analyses (deeper: context-free summaries).
MAX_CALL_DEPTH = 4
#: Context-sensitive analyses of one callee per analyze_types call (more: context-free).
MAX_CONTEXTS = 16


def module_has_tbaa(module: ModuleOp | None) -> bool:
    """Whether any load or store of ``module`` carries a TBAA access type (the reader's
    ``zymase.tbaa``). A walk of the whole module when none does (-O0): a caller that
    analyses many functions of one module reads it once (``Driver.has_tbaa``)."""
    return module is not None and any(
        "zymase.tbaa" in op.attributes for op in module.walk() if is_a(op, (llvm.LoadOp, llvm.StoreOp))
    )


class Shared:
    """State of one :func:`analyze_types` call: symbols, rule graphs, callee summaries."""

    def __init__(self, module: ModuleOp | None, has_tbaa: bool | None = None):
        self.funcs: dict[str, Operation] = {}
        self.globals: dict[str, Operation] = {}
        if module is not None:
            for op in module.body.block.ops:
                if isinstance(op, llvm.FuncOp):
                    self.funcs[op.sym_name.data] = op
                elif isinstance(op, llvm.GlobalOp):
                    self.globals[op.sym_name.data] = op
        # TBAA anywhere: the module was compiled with optimization (clang -O1 or more)
        self.has_tbaa = module_has_tbaa(module) if has_tbaa is None else has_tbaa
        self.graphs: dict[int, RuleGraph] = {}
        self.cache: dict[tuple, tuple[tuple[TypeTree, ...], TypeTree]] = {}
        self.contexts: dict[str, int] = {}
        self.rule_applications = 0  # deduction rules run, over every context (a cost measure)
        self.plain: dict[str, tuple[tuple[TypeTree, ...], TypeTree] | None] = {}

    def graph(self, func: Operation) -> RuleGraph:
        g = self.graphs.get(id(func))
        if g is None:
            g = self.graphs[id(func)] = RuleGraph(self, func)
        return g

    def summary(
        self, callee: Operation, seeds: tuple[TypeTree, ...], ret_seed: TypeTree, stack: tuple[str, ...]
    ) -> tuple[tuple[TypeTree, ...], TypeTree] | None:
        """What ``callee`` deduces about its arguments and result, analysed with
        ``seeds``/``ret_seed`` as what is known at the call site (None: nothing)."""
        name = callee.sym_name.data
        key = (name, seeds, ret_seed)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        if name in stack:
            return self.plain.get(name)  # recursion through other functions
        if len(stack) >= MAX_CALL_DEPTH or self.contexts.get(name, 0) >= MAX_CONTEXTS:
            return self.plain_summary(callee)
        self.contexts[name] = self.contexts.get(name, 0) + 1
        sub = Analyzer(self.graph(callee), seeds, ret_seed, stack + (name,), plain=False)
        sub.run()
        result = self.cache[key] = sub.summary()
        return result

    def plain_summary(self, callee: Operation) -> tuple[tuple[TypeTree, ...], TypeTree] | None:
        """The context-free summary of ``callee`` (its callees summarised the same way)."""
        name = callee.sym_name.data
        if name in self.plain:
            return self.plain[name]
        self.plain[name] = None  # in progress: recursion sees nothing
        sub = Analyzer(self.graph(callee), (), EMPTY, (name,), plain=True)
        sub.run()
        result = self.plain[name] = sub.summary()
        return result


class Analyzer:
    """One run of a function's rules to the fixpoint, in one calling context."""

    def __init__(self, graph: RuleGraph, seeds: Sequence[TypeTree], ret_seed: TypeTree,
                 stack: tuple[str, ...], plain: bool):
        self.graph = graph
        self.stack = stack
        self.plain = plain
        self.state: dict[object, TypeTree] = {}
        for arg, seed in zip(graph.formals, seeds):
            if seed is not None and not seed.is_empty() and is_ptr(arg):
                self.state[arg] = truncate(seed, MAX_DEPTH)
        if not ret_seed.is_empty():
            self.state[RET] = ret_seed
        n = len(graph.rules)
        self.queue: deque[int] = deque(range(n))
        self.queued: set[int] = set(range(n))

    def of(self, v: object) -> TypeTree:
        return self.state.get(v, EMPTY)

    def put(self, v: object, tree: TypeTree) -> None:
        if tree.is_empty():
            return
        old = self.state.get(v, EMPTY)
        new = join(old, truncate(tree, MAX_DEPTH))
        if new is not old:
            self.state[v] = new
            for r in self.graph.users.get(v, ()):
                if r not in self.queued:
                    self.queued.add(r)
                    self.queue.append(r)

    def run(self) -> None:
        rules = self.graph.rules
        applied = 0
        while self.queue:
            idx = self.queue.popleft()
            self.queued.discard(idx)
            rules[idx](self)
            applied += 1
        self.graph.shared.rule_applications += applied

    def summary(self) -> tuple[tuple[TypeTree, ...], TypeTree]:
        return tuple(self.of(a) for a in self.graph.formals), self.of(RET)
