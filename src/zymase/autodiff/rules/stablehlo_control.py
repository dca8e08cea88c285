"""Rules for StableHLO's control flow: ``stablehlo.while`` and ``stablehlo.case``.

A counted loop (``counter < N`` from a constant by 1: ``lax.fori_loop``, ``lax.scan``)
is reversed by ``stablehlo_scan``: the primal loop stores the body values the adjoint
needs, row by row, and the reverse loop reads them back (linear in the trip count).

JAX has no reverse mode for ``lax.while_loop`` (the trip count is unknown when the
program is traced, so it cannot size a tape). zymase reverses it by recomputation,
which needs no tape and keeps every shape static:

* a counting copy of the loop gives the trip count ``n``;
* a reverse loop runs ``j = n-1 .. 0``; each iteration recomputes the loop state
  before iteration ``j`` from the initial values (an inner loop of ``j`` body runs),
  then emits the adjoint of one body run at that state (``autodiff/hlo.reverse_sweep``
  over a copy of the body) and carries the state adjoints to the next.

That is ``n(n+1)/2`` body runs for the recomputation: fine for the few iterations of a
Newton solve, quadratic for long data-dependent loops (a checkpointing schedule would
bound it; not done). Forward mode carries tangents through one augmented loop.

Every value reaches the generated loops as a loop-carried value, as in what JAX
emits; a loop body that reads an active value from outside the loop is refused
(``hlo.refuse_active_captures``).
"""

from __future__ import annotations

from zymase.autodiff import hlo as hlo_ad
from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.flavor import Emitter
from zymase.autodiff.registry import REGISTRY, Rule
from zymase.autodiff.rules import stablehlo_scan
from zymase.autodiff.rules.stablehlo_regions import I64, Mapped, compare, down_to_zero, inline, inline_body, step, \
    while_
from zymase.ir import Block, Region, SSAValue
from zymase.ir import stablehlo as hlo


class _While(Rule):
    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _body_activity(self, ctx, op):
        """Activity of the body: a carried value is active when its initial value is, or
        when the body makes it depend on one that is (a fixpoint). A carried value that
        never is (scan's constant input sequence) gets no adjoint, which would otherwise
        be accumulated over the whole sequence in every iteration."""
        body = op.regions[1].blocks[0]
        floats = [hlo.is_float_tensor(v.type) for v in op.operands]
        active = [f and ctx.info.is_active(v) for f, v in zip(floats, op.operands)]
        while True:
            info = hlo_ad.block_activity(body, active)
            grown = [a or (f and v in info.varied) for a, f, v in zip(active, floats, body.last_op.operands)]
            if grown == active:
                return info
            active = grown

    def reverse(self, ctx, op, dys):
        if all(d is None for d in dys):
            return [None] * len(op.operands)
        if (counted := stablehlo_scan.counted_trips(op)) is not None:
            return stablehlo_scan.reverse_counted(ctx, op, dys, *counted, self._body_activity(ctx, op))
        E = ctx.E
        cond_region, body_region = op.regions
        inits = [ctx.primal(v) for v in op.operands]
        k = len(inits)
        floats = [i for i, v in enumerate(inits) if hlo.is_float_tensor(v.type)]
        body_info = self._body_activity(ctx, op)

        # the trip count: a copy of the loop that counts its iterations
        def count_cond(B, args):
            return inline(B, cond_region, args[:k])[0]

        def count_body(B, args):
            return inline(B, body_region, args[:k])[0] + [step(B, args[k], 1)]

        trips = while_(E, inits + [E.v(T.splat(0, I64))], count_cond, count_body)[k]

        # the reverse loop over j = n-1 .. 0, carrying (j, state adjoints, initial values)
        def rev_body(B, args):
            j, adjoints, start = args[0], args[1:1 + len(floats)], args[1 + len(floats):]

            def redo_cond(R, a):
                return [compare(R, a[0], a[1], "LT")]

            def redo_body(R, a):
                return [step(R, a[0], 1), a[1]] + inline(R, body_region, a[2:])[0]

            state = while_(B, [B.v(T.splat(0, I64)), j] + list(start), redo_cond, redo_body)[2:]
            returned, copied, active = inline_body(B, body_region, state, body_info, ctx.function)
            seeds: dict[SSAValue, SSAValue] = {}
            for i, d in zip(floats, adjoints):
                v = returned[i]
                seeds[v] = B.add(seeds[v], d) if v in seeds else d
            adjoint = hlo_ad.reverse_sweep(B, copied, Mapped(active), seeds, ctx.function)
            # an argument the body returns unchanged passes its adjoint straight through
            new = [adjoint.get(state[i]) or B.zero(state[i].type) for i in floats]
            return [step(B, j, -1)] + new + list(start)

        seeds = [dys[i] if dys[i] is not None else E.zero(inits[i].type) for i in floats]
        results = while_(E, [step(E, trips, -1)] + seeds + inits, down_to_zero, rev_body)
        out: list[SSAValue | None] = [None] * k
        for n, i in enumerate(floats):
            if ctx.wants(op.operands[i]):
                out[i] = results[1 + n]
        return out

    def forward(self, ctx, op, tangents):
        if all(t is None for t in tangents):
            return [None] * len(op.results)
        E = ctx.E
        cond_region, body_region = op.regions
        inits = [ctx.primal(v) for v in op.operands]
        k = len(inits)
        floats = [i for i, v in enumerate(inits) if hlo.is_float_tensor(v.type)]
        body_info = self._body_activity(ctx, op)

        def cond(B, args):
            return inline(B, cond_region, args[:k])[0]

        def body(B, args):
            returned, copied, active = inline_body(B, body_region, args[:k], body_info, ctx.function)
            active.update(args[i] for i in floats)
            tangent = {args[i]: args[k + n] for n, i in enumerate(floats)}
            hlo_ad.forward_sweep(B, copied, Mapped(active), tangent, ctx.function)
            return returned + [tangent.get(returned[i]) or B.zero(returned[i].type) for i in floats]

        start = inits + [tangents[i] if tangents[i] is not None else E.zero(inits[i].type) for i in floats]
        results = while_(E, start, cond, body)
        out: list[SSAValue | None] = [None] * len(op.results)
        for n, i in enumerate(floats):
            out[i] = results[k + n]
        return out


REGISTRY.register(hlo.WhileOp, _While())


class _Case(Rule):
    """stablehlo.case (lax.cond, lax.switch): branches without arguments that read the
    values around them. Activity analysis sees through them (``hlo.branch_blocks``).
    Both modes emit a case on the same index whose branches recompute their primal
    values and then give the adjoints of the values the branch read (reverse: one
    result per active value read by any branch, zero where a branch does not read it)
    or the tangents of the branch results (forward)."""

    def propagates(self, op, index):
        return False  # the branch index is an integer

    def reverse(self, ctx, op, dys):
        return [None] * len(op.operands)

    def forward(self, ctx, op, tangents):  # pragma: no cover - forward_captured is used
        raise NotImplementedError

    def _active_copy(self, ctx, region, mapping, captured):
        inside = [r for inner in region.walk() for r in inner.results]
        return {mapping[v] for v in inside if v in mapping and ctx.info.is_active(v)} | {
            v for v in captured if ctx.info.is_active(v)}

    def _case(self, ctx, op, result_types, branch) -> list[SSAValue]:
        regions = []
        for region in op.regions:
            block = Block()
            B = Emitter(ctx.E.flavor, ctx.E.module).at_end(block)
            block.add_op(hlo.ReturnOp.create(operands=branch(B, region)))
            regions.append(Region(block))
        new = hlo.CaseOp.create(operands=[ctx.primal(op.operands[0])], result_types=result_types, regions=regions)
        return list(ctx.E.insert(new).results)

    def captured_adjoints(self, ctx, op, dys):
        captured = hlo_ad.captured_values(op)
        wanted = [v for v in captured if ctx.wants(v)]
        if not wanted or all(d is None for d in dys):
            return {}

        def branch(B, region):
            returned, copied, mapping = inline(B, region, [])
            seeds: dict[SSAValue, SSAValue] = {}
            for v, d in zip(returned, dys):
                if d is not None:
                    seeds[v] = B.add(seeds[v], d) if v in seeds else d
            active = self._active_copy(ctx, region, mapping, captured)
            adjoint = hlo_ad.reverse_sweep(B, copied, Mapped(active), seeds, ctx.function)
            return [adjoint.get(v) or B.zero(v.type) for v in wanted]

        return dict(zip(wanted, self._case(ctx, op, [v.type for v in wanted], branch)))

    def forward_captured(self, ctx, op, tangents, around):
        captured = [v for v in hlo_ad.captured_values(op) if v in around]
        floats = [i for i, r in enumerate(op.results) if hlo.is_float_tensor(r.type)]
        if not captured or not floats:
            return [None] * len(op.results)

        def branch(B, region):
            returned, copied, mapping = inline(B, region, [])
            local = {v: around[v] for v in captured}
            active = self._active_copy(ctx, region, mapping, captured)
            hlo_ad.forward_sweep(B, copied, Mapped(active), local, ctx.function)
            return [local.get(returned[i]) or B.zero(returned[i].type) for i in floats]

        results = self._case(ctx, op, [op.results[i].type for i in floats], branch)
        out: list[SSAValue | None] = [None] * len(op.results)
        for i, t in zip(floats, results):
            out[i] = t
        return out


REGISTRY.register(hlo.CaseOp, _Case())
