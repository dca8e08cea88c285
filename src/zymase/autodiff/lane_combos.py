"""Vector forward mode's preaccumulated tangents: within a block, a chain of scalar float
ops computes its partials once for all lanes, and each lane's tangent is formed only
where it is needed, as one linear combination of the tangents the chain started from.

Lane by lane, ``out = x0 - 2 x1 + x2 + 0.1 x1 x1 x2`` costs each lane the tangent code of
every op (a product's ``t_a b + a t_b``: 11 flops per lane here). Its tangent is
``t0 + (-2 + 0.2 x1 x2) t1 + (1 + 0.1 x1^2) t2``: the coefficients are primal values the
lanes share, so they are computed once and each lane pays 2 multiplications and 2
additions. A value's tangent is kept as such a combination (``combos``: leaf value ->
coefficient, ``None`` for exactly 1) while every use of the value is another op this
module combines in the same block; otherwise, or once the combination has more than
``MAX_LEAVES`` leaves, or is used twice and has more than two, it is formed per lane
right after its op and becomes a leaf itself (so a tangent is always formed in the block
of its value and dominates its uses). The leaves are tangents formed the ordinary way:
loads from shadows, arguments, block arguments, call results.

Only at width > 1 (at width 1 there is nothing to share) and not in Laplacian mode
(which differentiates each lane's tangent code once more). Ops combined: single-result
scalar float ops whose rule is a plain :class:`~zymase.autodiff.registry.ScalarRule`. A
partial that may be infinite or NaN (the strong-zero guard ``t == 0 ? 0 : t * p`` is per
lane) makes its op take the lane-by-lane path, its operands formed first. Rounding: the
coefficients multiply out the chain's partials before the lanes' tangents are applied,
so lanes agree with width 1 to rounding, not bit for bit.
"""

from __future__ import annotations

from zymase.analysis.memory import memory_kind
from zymase.autodiff.registry import ScalarRule, is_constant_one
from zymase.ir import Operation, SSAValue, is_float_type

#: a combination with more leaves is formed per lane at once (each lane pays a
#: multiplication and an addition per leaf when it is formed)
MAX_LEAVES = 8

Combo = dict[SSAValue, "SSAValue | None"]


class LaneCombos:
    """Mixin of the forward generator (which has ``tmap``, ``each_lane``, ``E``, ``act``,
    ``ctx``, ``width``, ``laplacian``)."""

    def init_combos(self) -> None:
        self.combos: dict[SSAValue, Combo] = {}

    def combinable(self, op: Operation, rule=None) -> bool:
        """Whether ``op``'s tangent can be kept as a combination of its operands'."""
        if self.width == 1 or self.laplacian or len(op.results) != 1 or op.regions:
            return False
        if not (is_float_type(op.results[0].type) and self.act.is_active(op.results[0])):
            return False
        if memory_kind(op) is not None or self.ctx.defined_function(op) is not None:
            return False  # memory ops and calls of defined functions take tangents per lane
        rule = rule if rule is not None else self.ctx.rule_for(op)
        return isinstance(rule, ScalarRule) and type(rule).forward is ScalarRule.forward

    def combine(self, op: Operation, rule: ScalarRule) -> bool:
        """Emit ``op``'s coefficients once and keep its tangent as a combination, formed
        per lane now unless every use is a combinable op in this block. False (nothing
        kept) when a partial needs the strong-zero guard: the caller then takes the lane
        by lane path."""
        E = self.E
        parts: list[tuple[SSAValue | None, Combo]] = []  # (coefficient, None for 1; combination)
        with E.derivative_of(op):
            for i, operand in enumerate(op.operands):
                combo = self._combo_of(operand)
                if combo is None or not rule.propagates(op, i):
                    continue
                coefficient = rule.partial_value(self, op, i)
                if coefficient is None:
                    return False
                parts.append((None if is_constant_one(coefficient) else coefficient, combo))
            result = op.results[0]
            combo: Combo = {}
            for coefficient, operand_combo in parts:
                for leaf, c in operand_combo.items():
                    term = c if coefficient is None else coefficient if c is None else E.mul(coefficient, c)
                    if leaf in combo:  # the leaf reached through two operands: the coefficients add
                        known = combo[leaf]
                        term = E.add(E.const(1.0, leaf.type) if known is None else known,
                                     E.const(1.0, leaf.type) if term is None else term)
                    combo[leaf] = term
            self.combos[result] = combo
            if not self._stays_combined(result, combo):
                self.form_tangent(result)
        return True

    def form_deferred_operands(self, op: Operation) -> None:
        """Form per lane the tangents of ``op``'s operands still kept as combinations
        (``op`` takes them lane by lane)."""
        for operand in op.operands:
            if operand in self.combos and operand not in self.tmap:
                self.form_tangent(operand)

    def form_tangent(self, v: SSAValue) -> None:
        """``v``'s tangent in each lane: the sum of its leaves' tangents times their
        coefficients."""
        E = self.E
        combo = self.combos[v]
        for _ in self.each_lane():
            total = None
            for leaf, c in combo.items():
                t = self.tmap[leaf]
                term = t if c is None else E.mul(c, t)
                total = term if total is None else E.add(total, term)
            self.tmap[v] = total if total is not None else E.zero(v.type)

    def _combo_of(self, operand: SSAValue) -> Combo | None:
        """The operand's tangent as a combination (a formed tangent is a leaf), None
        when it has none."""
        if not self.act.is_active(operand):
            return None
        if operand in self.tmap:
            return {operand: None}
        return self.combos.get(operand)

    def _stays_combined(self, v: SSAValue, combo: Combo) -> bool:
        users = {use.operation for use in v.uses}
        if len(combo) > MAX_LEAVES or (len(users) > 1 and len(combo) > 2):
            return False
        block = v.owner.parent_block()
        return all(user.parent_block() is block and self.combinable(user) for user in users)
