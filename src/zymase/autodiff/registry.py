"""The rule registry: derivative rules attached to op classes from the outside.

A rule answers three questions about one op (the Enzyme-MLIR interfaces):
``propagates`` (does a derivative flow from operand i to the results — used by
activity analysis), ``reverse`` (operand adjoints from result adjoints) and
``forward`` (result tangents from operand tangents). Rules fetch primal values
through ``ctx.primal(value)`` so that the engine decides whether a value is read
again, recomputed or cached on the tape.

Most rules are :class:`ScalarRule`: one adjoint expression per differentiable
operand, written against the dialect-neutral :class:`~zymase.autodiff.flavor.Emitter`;
the forward tangent follows by linearity (tangent = sum of the operand partials
applied to the operand tangents).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from zymase.ir import Operation, SSAValue

if TYPE_CHECKING:
    from zymase.autodiff.flavor import Emitter

Partial = Callable[["Emitter", "Primals", SSAValue], SSAValue]


class Primals:
    """Access to the primal values an adjoint expression needs, resolved lazily by
    the engine (a value read in the reverse sweep may come from the tape)."""

    def __init__(self, ctx: "RuleContext", op: Operation):
        self.ctx = ctx
        self.op = op

    def arg(self, i: int) -> SSAValue:
        return self.ctx.primal(self.op.operands[i])

    def res(self, i: int = 0) -> SSAValue:
        return self.ctx.primal(self.op.results[i])

    def varies(self, i: int) -> bool:
        """Whether operand ``i`` is computed anew in each iteration of a loop around the
        op (in the reverse sweep such a value is recomputed or taped per iteration)."""
        return self.ctx.varies_in_loop(self.op.operands[i])

    def arg_type(self, i: int):
        return self.op.operands[i].type


class RuleContext(Protocol):
    E: "Emitter"

    def primal(self, value: SSAValue) -> SSAValue: ...

    def varies_in_loop(self, value: SSAValue) -> bool: ...

    def wants(self, value: SSAValue) -> bool:
        """Whether the derivative with respect to ``value`` is needed (it is active)."""
        ...


class Rule:
    def propagates(self, op: Operation, index: int) -> bool:
        raise NotImplementedError

    def reverse(self, ctx: RuleContext, op: Operation, dys: Sequence[SSAValue | None]) -> list[SSAValue | None]:
        raise NotImplementedError

    def forward(self, ctx: RuleContext, op: Operation, tangents: Sequence[SSAValue | None]) -> list[SSAValue | None]:
        raise NotImplementedError


class ScalarRule(Rule):
    """A single-result op with one partial (adjoint expression) per operand; ``None``
    marks an operand without derivative (an integer exponent, a rounding op)."""

    def __init__(self, *partials: Partial | None, name: str = ""):
        self.partials = partials
        self.name = name

    def _partial(self, i: int) -> Partial | None:
        return self.partials[i] if i < len(self.partials) else None

    def propagates(self, op, index):
        return self._partial(index) is not None

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        out: list[SSAValue | None] = []
        for i, operand in enumerate(op.operands):
            f = self._partial(i)
            # Only active operands get an adjoint: an inactive operand's partial
            # would fetch primal values (and tape them in loops) for nothing.
            wanted = f is not None and dy is not None and ctx.wants(operand)
            out.append(f(ctx.E, Primals(ctx, op), dy) if wanted else None)
        return out

    def forward(self, ctx, op, tangents):
        total = None
        for i, t in enumerate(tangents):
            f = self._partial(i)
            if f is None or t is None:
                continue
            term = f(ctx.E, Primals(ctx, op), t)
            total = term if total is None else ctx.E.add(total, term)
        return [total]


class Registry:
    """Rules keyed by op class, plus rules for calls keyed by the callee's neutral
    name (libm functions, LLVM intrinsics)."""

    def __init__(self):
        self.by_op: dict[type, Rule] = {}
        self.by_function: dict[str, Rule] = {}

    def register(self, op_class: type, rule: Rule) -> None:
        self.by_op[op_class] = rule

    def register_function(self, name: str, rule: Rule) -> None:
        self.by_function[name] = rule

    def lookup(self, op: Operation) -> Rule | None:
        rule = self.by_op.get(type(op))
        if rule is None:
            for cls, r in self.by_op.items():
                if isinstance(op, cls):
                    return r
        return rule


REGISTRY = Registry()


def register(*op_classes: type) -> Callable[[Rule], Rule]:
    def deco(rule: Rule) -> Rule:
        for cls in op_classes:
            REGISTRY.register(cls, rule)
        return rule

    return deco


def load_all_rules() -> Registry:
    """Import every rule module (each registers itself) and return the registry."""
    from zymase.autodiff.rules import arith as _a  # noqa: F401
    from zymase.autodiff.rules import libm as _l  # noqa: F401
    from zymase.autodiff.rules import llvm as _v  # noqa: F401
    from zymase.autodiff.rules import math as _m  # noqa: F401
    from zymase.autodiff.rules import memref as _r  # noqa: F401
    from zymase.autodiff.rules import scf as _s  # noqa: F401

    return REGISTRY
