"""AD-aware algebraic rewrites of StableHLO (issue 28 item 3): ``simplify`` and the table
of patterns.

Derivative code is full of what these remove: adjoint accumulations that start from a
zero splat (``x + 0``), transposes of transposes, broadcasts of broadcasts and of splats
(seeds, the adjoint of a reduce), zero pads multiplied by large operands (the adjoint of
a slice), slices of concatenates (the adjoint of a concatenate), reduces of broadcasts.
The patterns themselves are registered by ``hlo_patterns_algebra``,
``hlo_patterns_movement`` and ``hlo_patterns_reduce`` in ``hlo_rewrite_base.REWRITES``
(``zymase-opt --list-rewrites`` prints them with their one-line summaries).

``simplify`` runs them greedily to a fixpoint, then xDSL's CSE and DCE (the StableHLO
ops are ``Pure``); zymase-opt names it ``stablehlo-simplify``. ``frontends/jax`` runs it
on the user's function before differentiation (exact patterns only) and on every
derivative module after it. Greedy rewriting, not equality saturation: every pattern
here shrinks the program or moves work to a smaller tensor, so applying them in any
order ends in the same place; none needs to explore alternatives.
"""

from __future__ import annotations

from zymase.ir import (
    GreedyRewritePatternApplier,
    ModuleOp,
    Operation,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    make_context,
    xdsl_pass,
)
from zymase.transforms import hlo_patterns_algebra as _algebra  # noqa: F401  (each registers its patterns)
from zymase.transforms import hlo_patterns_movement as _movement  # noqa: F401
from zymase.transforms import hlo_patterns_reduce as _reduce  # noqa: F401
from zymase.transforms.hlo_rewrite_base import REWRITES, Rewrite, splat_value  # noqa: F401  (re-exported)


class _Patterns(RewritePattern):
    """The registered patterns of one root op class, tried in registration order."""

    def __init__(self, root: type, entries: list[Rewrite], keep: frozenset, exact_only: bool):
        self.root = root
        self.entries = [r for r in entries if not (exact_only and r.liberty)]
        self.keep = keep

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if type(op) is not self.root:
            return
        for entry in self.entries:
            if entry.liberty and op in self.keep:
                continue
            entry.apply(op, rewriter)
            if rewriter.has_done_action:
                return


def simplify(module: ModuleOp, keep=frozenset(), exact_only: bool = False) -> None:
    """The rewrites to a fixpoint, then CSE and DCE. The ops in ``keep`` (the primal ops
    of a derivative module) get only the exact rewrites, not the ``liberty`` ones; with
    ``exact_only`` no op gets those (a module before differentiation)."""
    by_root: dict[type, list[Rewrite]] = {}
    for r in REWRITES:
        by_root.setdefault(r.root, []).append(r)
    patterns = [_Patterns(root, entries, frozenset(keep), exact_only) for root, entries in by_root.items()]
    PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(module)
    ctx = make_context()
    xdsl_pass("cse").apply(ctx, module)
    xdsl_pass("dce").apply(ctx, module)


def rewrite_table() -> str:
    """One line per pattern: name, root op, summary, and whether it is exact."""
    lines = []
    for r in REWRITES:
        lines.append(f"{r.name:<30} {r.root.name:<31} {r.summary}  [{r.exactness}]")
    return "\n".join(lines) + "\n"
