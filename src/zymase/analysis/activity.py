"""Activity analysis: which values carry derivatives.

A value is *active* when it is both **varied** (depends on an active input through
differentiable operations) and **useful** (reaches an active output through
differentiable operations). Only active values get derivative code; everything
else is copied as primal code. Only floating-point values can be active (this
issue's scope: scalar code; pointers and memory come with shadow memory).

``propagates(op, i)`` decides whether a derivative can flow from operand ``i`` to
the op's results: the rule registry knows it for ops with rules; a call to a
defined function propagates through all float arguments; an op without a rule is
assumed to propagate through all float operands, so that a missing rule on an
active path becomes an error instead of a silently zero derivative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zymase.ir import Block, BlockArgument, Operation, SSAValue, is_float_type
from zymase.ir.enzyme import Activity


@dataclass
class ActivityInfo:
    varied: set[SSAValue]
    useful: set[SSAValue]

    def is_active(self, v: SSAValue) -> bool:
        return v in self.varied and v in self.useful

    def op_is_active(self, op: Operation) -> bool:
        return any(self.is_active(r) for r in op.results)


def _successor_operands(term: Operation, flavor) -> list[list[SSAValue]]:
    return flavor.successor_operands(term)


def analyze(
    body_blocks: Sequence[Block],
    arg_activities: Sequence[Activity],
    returned: Sequence[tuple[SSAValue, Activity]],
    propagates: Callable[[Operation, int], bool],
    flavor,
) -> ActivityInfo:
    """Activity of every value in a function body.

    ``returned`` pairs each value reaching a return op with that result's activity.
    """
    entry = body_blocks[0]
    # Edges: for each block argument, the values flowing into it.
    incoming: dict[SSAValue, list[SSAValue]] = {}
    feeds: dict[SSAValue, list[SSAValue]] = {}
    for b in body_blocks:
        term = b.last_op
        if term is None or not term.successors:
            continue
        for succ, operands in zip(term.successors, _successor_operands(term, flavor)):
            for arg, val in zip(succ.args, operands):
                incoming.setdefault(arg, []).append(val)
                feeds.setdefault(val, []).append(arg)

    def differentiable(v: SSAValue) -> bool:
        return is_float_type(v.type)

    # ---- varied: forward closure ----------------------------------------------
    varied: set[SSAValue] = set()
    work: list[SSAValue] = []
    for arg, act in zip(entry.args, arg_activities):
        if (act.is_active or act.is_dup) and differentiable(arg):
            varied.add(arg)
            work.append(arg)
    while work:
        v = work.pop()
        for use in list(v.uses):
            op = use.operation
            if op.successors:
                continue  # handled through `feeds`
            if not propagates(op, use.index):
                continue
            for r in op.results:
                if r not in varied and differentiable(r):
                    varied.add(r)
                    work.append(r)
        for arg in feeds.get(v, ()):
            if arg not in varied and differentiable(arg):
                varied.add(arg)
                work.append(arg)

    # ---- useful: backward closure ----------------------------------------------
    useful: set[SSAValue] = set()
    for v, act in returned:
        if act.is_active and differentiable(v) and v not in useful:
            useful.add(v)
            work.append(v)
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument):
            for src in incoming.get(v, ()):
                if src not in useful and differentiable(src):
                    useful.add(src)
                    work.append(src)
            continue
        op = v.owner
        assert isinstance(op, Operation)
        for i, operand in enumerate(op.operands):
            if operand not in useful and differentiable(operand) and propagates(op, i):
                useful.add(operand)
                work.append(operand)
    return ActivityInfo(varied, useful)
