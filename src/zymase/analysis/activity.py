"""Activity analysis: which values carry derivatives, which pointers carry shadows.

A float value is *active* when it is both **varied** (depends on an active input
through differentiable operations, or is loaded from memory that may hold active
data) and **useful** (reaches an active output, or is stored to memory that carries a
shadow). Only active values get derivative code; everything else is copied as primal
code.

Pointers carry no derivative themselves; a pointer is *shadowed* when the memory it
points to may hold active data, and then it has a shadow pointer (Enzyme's shadow
memory): duplicated arguments bring theirs, and a local allocation that receives
active data gets a zeroed shadow allocation. See :mod:`zymase.analysis.memory`.

``propagates(op, i)`` decides whether a derivative can flow from operand ``i`` to
the op's results: the rule registry knows it for ops with rules; a call to a
defined function propagates through all float arguments; an op without a rule is
assumed to propagate through all float operands, so that a missing rule on an
active path becomes an error instead of a silently zero derivative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from zymase.analysis.op_classes import is_a
from zymase.analysis.scf import value_flow
from zymase.autodiff.type_rules import is_differentiable_type
from zymase.ir import Block, BlockArgument, Operation, SSAValue
from zymase.ir.enzyme import Activity


@dataclass
class ActivityInfo:
    varied: set[SSAValue]
    useful: set[SSAValue]
    shadowed: set[SSAValue] = field(default_factory=set)
    shadow_allocations: set[Operation] = field(default_factory=set)
    shadow_globals: set[str] = field(default_factory=set)

    def is_active(self, v: SSAValue) -> bool:
        return v in self.varied and v in self.useful

    def op_is_active(self, op: Operation) -> bool:
        return any(self.is_active(r) for r in op.results)

    def has_shadow(self, v: SSAValue) -> bool:
        return v in self.shadowed


def analyze(
    body_blocks: Sequence[Block],
    arg_activities: Sequence[Activity],
    returned: Sequence[tuple[SSAValue, Activity]],
    propagates: Callable[[Operation, int], bool],
    flavor,
    memory=None,
) -> ActivityInfo:
    """Activity of every value in a function body.

    ``returned`` pairs each value reaching a return op with that result's activity;
    ``memory`` (a :class:`~zymase.analysis.memory.MemoryModel`) handles loads, stores,
    allocations and pointer arithmetic when the body touches memory.
    """
    entry = body_blocks[0]
    incoming: dict[SSAValue, list[SSAValue]] = {}
    for b in body_blocks:
        term = b.last_op
        if term is None or not term.successors:
            continue
        for succ, operands in zip(term.successors, flavor.successor_operands(term)):
            for arg, val in zip(succ.args, operands):
                incoming.setdefault(arg, []).append(val)
    # Structured ops (scf.for/if/while) pass values into region arguments and out
    # to their results like branches do: the same edges, see analysis/scf.py.
    for b in body_blocks:
        for op in b.ops:
            for dst, src in value_flow(op):
                incoming.setdefault(dst, []).append(src)

    info = ActivityInfo(set(), set())
    varied, shadowed = info.varied, info.shadowed
    for arg, act in zip(entry.args, arg_activities):
        if act.is_active or act.is_dup:
            if is_differentiable_type(arg.type):
                varied.add(arg)
            elif memory is not None and memory.is_pointer(arg):
                shadowed.add(arg)

    # ---- varied values and shadowed pointers: a fixpoint over the body ---------
    # (memory makes this non-local: a store may give a shadow to an allocation whose
    # other pointers were already visited, so the body is swept until stable)
    changed = True
    while changed:
        before = (len(varied), len(shadowed))
        for b in body_blocks:
            for arg in b.args:
                srcs = incoming.get(arg, ())
                if is_differentiable_type(arg.type) and arg not in varied and any(s in varied for s in srcs):
                    varied.add(arg)
                if memory is not None and arg not in shadowed and any(s in shadowed for s in srcs):
                    # every pointer flowing into a shadowed block argument needs a shadow
                    for s in srcs:
                        memory.need_shadow(s, b.parent.parent if b.parent else None, info, incoming)
                    shadowed.add(arg)
            for op in b.ops:
                if op.successors:
                    continue
                if op.regions and any(r in incoming for r in op.results):
                    for r in op.results:
                        if r not in varied and is_differentiable_type(r.type) and any(s in varied for s in incoming.get(r, ())):
                            varied.add(r)
                        if memory is not None and any(s in shadowed for s in incoming.get(r, ())):
                            shadowed.add(r)  # a memref carried out of a region (its rule refuses it)
                    continue
                if memory is not None and memory.handles(op):
                    memory.transfer(op, info, incoming)
                    continue
                if any(o in varied and propagates(op, i) for i, o in enumerate(op.operands)):
                    for r in op.results:
                        if is_differentiable_type(r.type):
                            varied.add(r)
        changed = (len(varied), len(shadowed)) != before

    # ---- useful: backward closure -----------------------------------------------
    useful = info.useful
    work: list[SSAValue] = []
    for v, act in returned:
        if act.is_active and is_differentiable_type(v.type) and v not in useful:
            useful.add(v)
            work.append(v)
    if memory is not None:
        for v in memory.stored_to_shadow(body_blocks, info):
            if v not in useful:
                useful.add(v)
                work.append(v)
    while work:
        v = work.pop()
        if is_a(v, BlockArgument) or v in incoming:
            for src in incoming.get(v, ()):
                if src not in useful and is_differentiable_type(src.type):
                    useful.add(src)
                    work.append(src)
            continue
        op = v.owner
        assert isinstance(op, Operation)
        if memory is not None and memory.handles(op) and not memory.is_memory_call(op):
            continue  # a load: its adjoint goes to shadow memory
        for i, operand in enumerate(op.operands):
            if operand not in useful and is_differentiable_type(operand.type) and propagates(op, i):
                useful.add(operand)
                work.append(operand)
    return info
