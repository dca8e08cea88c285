"""Calls to functions the user marked inactive or like a libm function (Enzyme's
``enzyme_inactive`` / ``enzyme_function_like``, read by ``llvm/annotations.py``): the
rules the engine uses for them instead of differentiating their bodies.

``Context.defined_function`` treats such a function as external (never inlined, no
derivative function generated for it) and ``Context.rule_for`` asks :func:`rule_for_marked`:
an inactive call gets :data:`INACTIVE_RULE` (it propagates nothing: its result is a
constant), a function_like call the scalar rule of the libm function it names. Globals
marked inactive are never shadowed (``analysis/memory.MemoryModel``).
"""

from __future__ import annotations

from zymase.autodiff.registry import REGISTRY, Rule, ScalarRule, load_all_rules
from zymase.ir import Operation, is_float_type, llvm


class InactiveRule(Rule):
    """No derivative through the call: activity analysis never makes its result active,
    so neither generator asks for an adjoint or a tangent."""

    def propagates(self, op: Operation, index: int) -> bool:
        return False

    def reverse(self, ctx, op, dys):
        return [None] * len(op.operands)

    def forward(self, ctx, op, tangents):
        return [None] * len(op.results)


INACTIVE_RULE = InactiveRule()


def inactive_global_names(module: Operation) -> frozenset[str]:
    """The globals marked inactive (``llvm/annotations.INACTIVE_GLOBAL``)."""
    from zymase.llvm.annotations import INACTIVE_GLOBAL

    return frozenset(op.sym_name.data for op in module.body.block.ops
                     if isinstance(op, llvm.GlobalOp) and INACTIVE_GLOBAL in op.attributes)


def mark_of(fop: Operation | None) -> tuple[str, str] | None:
    from zymase.llvm.annotations import function_mark

    return function_mark(fop) if isinstance(fop, llvm.FuncOp) else None


def rule_for_marked(fop: Operation | None) -> Rule | None:
    """The rule for calls of a marked function, None for an unmarked one."""
    mark = mark_of(fop)
    if mark is None:
        return None
    if mark[0] == "inactive":
        return INACTIVE_RULE
    if mark[0] != "like":
        return None  # an allocator: analysis/memory.memory_kind says what its calls do
    load_all_rules()

    return REGISTRY.by_function.get(mark[1])


def like_rule_problem(fop: Operation, like: str) -> str | None:
    """Why ``fop`` cannot take the derivative rule of libm's ``like``, or None."""
    load_all_rules()

    rule = REGISTRY.by_function.get(like)
    if not isinstance(rule, ScalarRule):
        return f"zymase has no derivative rule for a libm function named '{like}'"
    inputs = list(fop.function_type.inputs.data)
    out = fop.function_type.output
    if not is_float_type(out):
        return f"it does not return a floating-point value like {like} does"
    if len(inputs) != len(rule.partials):
        return f"it takes {len(inputs)} parameters and {like} takes {len(rule.partials)}"
    for i, (t, partial) in enumerate(zip(inputs, rule.partials)):
        if partial is not None and t != out:
            return f"parameter {i + 1} is not of its result's floating-point type, as in {like}"
    return None
