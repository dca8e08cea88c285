"""Laplacian mode: the collapsed forward Laplacian, forward mode with ``N`` gradient
lanes and one more lane that carries a summed second-order term.

Every active value ``v`` carries its value, ``N`` tangents ``g_v[k]`` (lanes
``0..N-1``, the gradient along ``N`` seed directions) and one scalar ``l_v`` (lane
``N``): the sum over the lanes of the second directional derivative of ``v`` along
each direction. For an op ``y = f(a, b, ...)``:

    g_y[k] = f'(a)[g_a[k]]                         (the forward rule, lane by lane)
    l_y    = f'(a)[l_a] + sum_k f''(a)[g_a[k], g_a[k]]

The first term of ``l_y`` is the forward rule applied to lane ``N``, since a linear map
of the summed terms is the sum of the linear maps; so the generator treats lane ``N``
as one more lane (memory, branches, calls, loops: everything linear is the same code)
and this mixin only adds the quadratic correction to lane ``N`` after each nonlinear
op. Seeded with ``g_x[k] = e_k`` and ``l_x = 0``, ``l_y`` at the result is the sum of
the Hessian's diagonal entries along the ``N`` directions: the Laplacian, or one chunk
of it (``zymase.laplacian`` sums the chunks).

Why the quadratic term is derived and not tabulated: ``f''(a)[t, t]`` is the derivative
along ``t`` of the tangent code ``f'(a)[t]`` with ``t`` held fixed. The generator
already emitted that code for lane ``k``; :meth:`LaplacianTerms.add_second_order`
differentiates it once more, forward, over the ops just emitted (primal operands and
results move with their lane-``k`` tangents, the tangents themselves are constants), with
the same rule registry. Every op with a forward rule therefore has its second-order
term, built from the rules that are already tested (``tanh`` gives
``-2 y (1 - y^2) t^2`` from the partial ``1 - y^2``, a product ``2 t_a t_b``), and an op
whose tangent code holds something without a forward rule is refused by name.
"""

from __future__ import annotations

from zymase.autodiff.type_rules import is_differentiable_type
from zymase.errors import ZymaseError
from zymase.ir import Operation, SSAValue, is_float_type, location_of


class _TangentCodeContext:
    """What a rule sees while the tangent code of one op is differentiated again: the
    values are already the derivative function's (``primal`` is the identity), every
    value with a second-order tangent is wanted. Strong zeros: a singular rule guards its
    terms (a zero tangent stays zero); other values are taken as finite, since they are
    the tangent code of a function whose first-order code computed them finite."""

    def __init__(self, gen, origin: Operation):
        self.E = gen.E
        self.ctx = gen.ctx
        self.flavor = gen.flavor
        self._gen = gen
        self._origin = origin

    def primal(self, v: SSAValue) -> SSAValue:
        return v

    def varies_in_loop(self, v: SSAValue) -> bool:
        return False

    def wants(self, v: SSAValue) -> bool:
        return True

    def may_be_nonfinite(self, v: SSAValue) -> bool:
        return False

    def singular_here(self, op: Operation, rule) -> bool:
        return bool(getattr(rule, "singular", False))

    def __getattr__(self, name: str):
        # a rule reaching for generator state (maps, memory) is not a pure tangent
        # expression: refused rather than given the first-order maps
        raise refusal(self._origin, self._gen.fname, f"its tangent code asks the generator for '{name}'")


def refusal(op: Operation, fname: str, why: str) -> ZymaseError:
    from zymase.autodiff.common import describe

    return ZymaseError(f"Laplacian mode has no second-order term for this operation: {why}",
                       construct=describe(op), function=fname, location=location_of(op),
                       hint="use zymase.hessian(f) and its trace, or the Taylor-mode laplacian (one jet per direction)")


def pairwise_sum(E, values: list[SSAValue]) -> SSAValue:
    """The sum of ``values`` as a balanced tree of adds. The N lanes' terms of one op
    summed left to right form a chain of N dependent adds per element (64 at d = 64:
    about 256 cycles of latency in every iteration of an element-wise loop, which the
    processor cannot overlap with the next iteration's, since one iteration is hundreds
    of instructions); as a tree the chain is log2(N) adds deep. Exact to rounding, as any
    order is."""
    values = list(values)
    while len(values) > 1:
        paired = [E.add(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        if len(values) % 2:
            paired.append(values[-1])
        values = paired
    return values[0]


class LaplacianTerms:
    """Mixin of :class:`zymase.autodiff.forward.ForwardGenerator`: the quadratic part of
    lane ``N``'s tangent. The generator calls :meth:`emitted_since` around each lane's
    rule call and :meth:`add_second_order` once the lanes are done."""

    laplacian = False

    def emission_mark(self) -> Operation | None:
        """The last op of the block being emitted into (ops after it are new)."""
        return self.E.block.last_op

    def emitted_since(self, mark: Operation | None) -> list[Operation]:
        op = self.E.block.first_op if mark is None else mark.next_op
        out = []
        while op is not None:
            out.append(op)
            op = op.next_op
        return out

    def add_second_order(self, op: Operation, lane_code: list[list[Operation]], rule=None) -> None:
        """Add ``sum_k f''(a)[g_a[k], g_a[k]]`` to lane ``N``'s tangent of each active
        result of ``op``; ``lane_code[k]`` is the tangent code emitted for lane ``k``
        (``rule``: the op's rule, for :meth:`_add_factored_second_order`)."""
        if self._add_factored_second_order(op, rule):
            return
        E = self.E
        n = self.width - 1
        terms: dict[SSAValue, list[SSAValue]] = {}
        for k in range(n):
            seeds: dict[SSAValue, SSAValue] = {}
            lane = self.of_every_lane("tmap")[k]
            for o in (*op.operands, *op.results):
                if self.act.is_active(o) and o in lane:
                    seeds[self.primal(o)] = lane[o]
            if not seeds:
                continue
            second = self._differentiate_again(op, lane_code[k], seeds)
            for r in op.results:
                if not self.act.is_active(r) or r not in lane:
                    continue
                q = second.get(lane[r])
                if q is not None:
                    terms.setdefault(r, []).append(q)
        last = self.of_every_lane("tmap")[n]
        for r, qs in terms.items():
            with E.derivative_of(op):
                last[r] = E.add(last[r], pairwise_sum(E, qs))

    def _add_factored_second_order(self, op: Operation, rule) -> bool:
        """The second-order term of an op of one active operand ``a`` (``tanh``, ``exp``,
        a product by a constant) as ``f''(a) * sum_k g_a[k]^2``: lane ``k``'s term
        ``f''(a)[g_a[k], g_a[k]]`` is ``f''(a) g_a[k]^2``, so the coefficient is derived
        once, from the tangent code for a unit tangent, and each lane costs one square and
        one add rather than its own derived code (four or five operations, for ``tanh``).
        The sum is zero when every lane's tangent is (strong zeros: an infinite ``f''``,
        as ``x ** 1.5`` has at 0, times no direction is no term). False (nothing
        emitted) for other ops: two active operands have cross terms ``g_a[k] g_b[k]``,
        and rules other than scalar ones may touch the generator's state."""
        from zymase.autodiff.registry import ScalarRule

        if not isinstance(rule, ScalarRule) or len(op.results) != 1 or not self.act.is_active(op.results[0]):
            return False
        active = [i for i, o in enumerate(op.operands) if self.act.is_active(o)]
        if len(active) != 1 or not is_float_type(op.operands[active[0]].type):
            return False
        a, r = op.operands[active[0]], op.results[0]
        n = self.width - 1
        lanes = self.of_every_lane("tmap")
        tangents = [lanes[k].get(a) for k in range(n)]
        if any(t is None for t in tangents) or any(r not in lanes[k] for k in range(n + 1)):
            return False
        E = self.E
        one = E.const(1.0, a.type)
        unit = [one if i == active[0] else None for i in range(len(op.operands))]
        mark = self.emission_mark()
        with E.derivative_of(op):
            unit_tangent = rule.forward(self, op, unit)[0]
        if unit_tangent is None:
            return True  # no tangent, no second-order term
        code = self.emitted_since(mark)
        coefficient = self._differentiate_again(op, code, {self.primal(a): one, self.primal(r): unit_tangent})
        c = coefficient.get(unit_tangent)
        if c is None:
            return True  # linear in a: no second-order term (its unit code is dead)
        with E.derivative_of(op):
            squares = pairwise_sum(E, [E.mul(t, t) for t in tangents])
            zero = E.zero(r.type)
            term = E.select(E.fcmp("oeq", squares, zero), zero, E.mul(c, squares))
            lanes[n][r] = E.add(lanes[n][r], term)
        return True

    def _differentiate_again(self, origin: Operation, code: list[Operation],
                             seeds: dict[SSAValue, SSAValue]) -> dict[SSAValue, SSAValue]:
        """Forward derivatives of the values ``code`` computes, along the tangents
        ``seeds`` gives its inputs (anything else held constant)."""
        ctx = _TangentCodeContext(self, origin)
        tau = dict(seeds)
        for o in code:
            ins = [tau.get(v) for v in o.operands]
            if all(t is None for t in ins):
                continue
            if not any(is_differentiable_type(r.type) for r in o.results):
                continue  # a comparison or an integer: no derivative (piecewise constant)
            if o.regions or o.successors:
                raise refusal(origin, self.fname, f"its tangent code contains control flow ({o.name})")
            rule = self.ctx.rule_for(o)
            if rule is None:
                raise refusal(origin, self.fname, f"its tangent code calls {o.name} (no forward rule)")
            with self.E.derivative_of(o):
                outs = rule.forward(ctx, o, ins)
            for r, t in zip(o.results, outs):
                if t is not None:
                    tau[r] = t
        return tau
