"""Rules for StableHLO's control flow: ``stablehlo.while`` and ``stablehlo.case``.

A counted loop (``counter < N`` from a constant by 1: ``lax.fori_loop``, ``lax.scan``)
is reversed with a tape: a forward copy stores each loop state in row ``i`` of a tensor
of ``N`` rows, the reverse loop reads the rows back (linear in the trip count).

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
from zymase.ir import Block, IntegerType, Region, SSAValue, TensorType
from zymase.ir import stablehlo as hlo

_I64 = TensorType(IntegerType(64), [])


class _Mapped:
    """Activity of a copied body: the copy's values active where the original's are."""

    def __init__(self, active: set[SSAValue]):
        self.active = active

    def is_active(self, v: SSAValue) -> bool:
        return v in self.active

    def op_is_active(self, op) -> bool:
        return any(r in self.active for r in op.results)


def _inline(E: Emitter, region: Region, args: list[SSAValue]) -> tuple[list[SSAValue], list, dict]:
    """Copy ``region``'s single block at ``E`` with its arguments bound to ``args``;
    returns the copied terminator's operands, the copied ops and the value mapping."""
    block = region.blocks[0]
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args))
    copied = []
    for op in block.ops:
        if op is block.last_op:
            break
        copy = op.clone(value_mapper=mapping)
        E.insert(copy)
        copied.append(copy)
    return [mapping.get(v, v) for v in block.last_op.operands], copied, mapping


def _inline_body(E: Emitter, region: Region, args: list[SSAValue], info, function: str):
    """A copy of a loop body (``_inline``), refused if it reads an active value from outside
    the loop; returns its results, its ops and the copies of the values ``info`` (the body's
    activity) finds active."""
    returned, copied, mapping = _inline(E, region, args)
    hlo_ad.refuse_active_captures(copied, {mapping[v] for v in info.varied if v in mapping}, function)
    return returned, copied, {mapping[v] for v in info.useful & info.varied if v in mapping}


def _while(E: Emitter, operands: list[SSAValue], cond, body) -> list[SSAValue]:
    """Insert a ``stablehlo.while`` on ``operands``; ``cond(E, args)`` returns the
    predicate, ``body(E, args)`` the next values, each built in a fresh block."""
    types = [v.type for v in operands]
    regions = []
    for build in (cond, body):
        block = Block(arg_types=types)
        inner = Emitter(E.flavor, E.module).at_end(block)
        values = build(inner, list(block.args))
        block.add_op(hlo.ReturnOp.create(operands=list(values)))
        regions.append(Region(block))
    op = hlo.WhileOp.create(operands=list(operands), result_types=types, regions=regions)
    return list(E.insert(op).results)


def _compare(E: Emitter, a: SSAValue, b: SSAValue, direction: str) -> SSAValue:
    op = hlo.CompareOp.create(operands=[a, b], result_types=[TensorType(IntegerType(1), [])],
                              properties={"comparison_direction": hlo.comparison(direction),
                                          "compare_type": hlo.comparison_type("SIGNED")})
    return E.v(op)


def _step(E: Emitter, counter: SSAValue, by: int) -> SSAValue:
    return E.v(hlo.AddOp.create(operands=[counter, E.v(T.splat(by, _I64))], result_types=[_I64]))


def _constant(v: SSAValue) -> int | None:
    """The value of a scalar integer ``stablehlo.constant``, else None."""
    op = v.owner
    if not isinstance(op, hlo.ConstantOp) or v.type.get_shape() or hlo.is_float_tensor(v.type):
        return None
    values = op.value.get_values()
    return int(values[0]) if len(values) == 1 else None


class _While(Rule):
    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _static_trips(self, op) -> tuple[int, int, int] | None:
        """(counter position, start, trip count) of a loop whose condition is
        ``counter < N`` for a constant N, counting by 1 from a constant (what
        ``lax.fori_loop`` and ``lax.scan`` emit); None for other loops."""
        cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
        test = cond.last_op.operands[0].owner
        if not isinstance(test, hlo.CompareOp) or hlo.direction_of(test) != "LT":
            return None
        counter, bound = test.operands
        if counter not in cond.args or (limit := _constant(bound)) is None:
            return None
        k = list(cond.args).index(counter)
        step = body.last_op.operands[k].owner
        if not isinstance(step, hlo.AddOp) or body.args[k] not in step.operands:
            return None
        other = step.operands[1] if step.operands[0] is body.args[k] else step.operands[0]
        if _constant(other) != 1 or (start := _constant(op.operands[k])) is None:
            return None
        return k, start, max(0, limit - start)

    def _reverse_taped(self, ctx, op, dys, k, start, trips):
        """Reverse of a counted loop: the forward copy stores every loop state on a tape
        of ``trips`` rows (a tensor per carried value); the reverse loop reads row j back
        instead of recomputing it."""
        E = ctx.E
        cond_region, body_region = op.regions
        inits = [ctx.primal(v) for v in op.operands]
        n = len(inits)
        floats = [i for i, v in enumerate(inits) if hlo.is_float_tensor(v.type)]
        body_info = self._body_activity(op)
        if trips == 0:
            return [dys[i] if i in floats and ctx.wants(op.operands[i]) else None for i in range(n)]
        # values the body passes through unchanged (scan's input sequence) are not taped:
        # every iteration sees the initial value
        body = body_region.blocks[0]
        taped = [i for i in range(n) if body.last_op.operands[i] is not body.args[i]]
        tape_types = [TensorType(inits[i].type.element_type, [trips, *inits[i].type.get_shape()]) for i in taped]

        def row_index(B, counter):
            index = B.v(hlo.ConvertOp.create(operands=[counter], result_types=[_I64]))
            return _step(B, index, -start) if start else index

        def record_cond(B, args):
            return _inline(B, cond_region, args[:n])[0]

        def record_body(B, args):
            row = row_index(B, args[k])
            zero = B.v(T.splat(0, _I64))
            tapes = []
            for v, tape in zip((args[i] for i in taped), args[n:]):
                one_row = T.reshape(B, v, [1, *v.type.get_shape()])
                tapes.append(T.emit(B, hlo.DynamicUpdateSliceOp, [tape, one_row, row] + [zero] * len(v.type.get_shape()),
                                    tape.type))
            return _inline(B, body_region, args[:n])[0] + tapes

        empty = [E.v(T.splat(0, t)) for t in tape_types]
        tapes = _while(E, inits + empty, record_cond, record_body)[n:]

        def rev_cond(B, args):
            return [_compare(B, args[0], B.v(T.splat(0, _I64)), "GE")]

        def rev_body(B, args):
            j, adjoints = args[0], args[1:1 + len(floats)]
            rows = args[1 + len(floats):1 + len(floats) + len(taped)]
            start_values = args[1 + len(floats) + len(taped):]
            zero = B.v(T.splat(0, _I64))
            state = list(start_values)
            for i, tape in zip(taped, rows):
                shape = list(inits[i].type.get_shape())
                row = T.emit(B, hlo.DynamicSliceOp, [tape, j] + [zero] * len(shape),
                             TensorType(inits[i].type.element_type, [1, *shape]), slice_sizes=hlo.array([1, *shape]))
                state[i] = T.reshape(B, row, shape)
            returned, copied, active = _inline_body(B, body_region, state, body_info, ctx.function)
            seeds: dict[SSAValue, SSAValue] = {}
            for i, d in zip(floats, adjoints):
                v = returned[i]
                seeds[v] = B.add(seeds[v], d) if v in seeds else d
            adjoint = hlo_ad.reverse_sweep(B, copied, _Mapped(active), seeds, ctx.function)
            new = [adjoint.get(state[i]) or B.zero(state[i].type) for i in floats]
            return [_step(B, j, -1)] + new + list(rows) + list(start_values)

        seeds = [dys[i] if dys[i] is not None else E.zero(inits[i].type) for i in floats]
        results = _while(E, [E.v(T.splat(trips - 1, _I64))] + seeds + tapes + inits, rev_cond, rev_body)
        out: list[SSAValue | None] = [None] * n
        for m, i in enumerate(floats):
            if ctx.wants(op.operands[i]):
                out[i] = results[1 + m]
        return out

    def _body_activity(self, op):
        float_args = [hlo.is_float_tensor(v.type) for v in op.operands]
        return hlo_ad.block_activity(op.regions[1].blocks[0], float_args)

    def reverse(self, ctx, op, dys):
        if all(d is None for d in dys):
            return [None] * len(op.operands)
        if (counted := self._static_trips(op)) is not None:
            return self._reverse_taped(ctx, op, dys, *counted)
        E = ctx.E
        cond_region, body_region = op.regions
        inits = [ctx.primal(v) for v in op.operands]
        k = len(inits)
        floats = [i for i, v in enumerate(inits) if hlo.is_float_tensor(v.type)]
        body_info = self._body_activity(op)

        # the trip count: a copy of the loop that counts its iterations
        def count_cond(B, args):
            return _inline(B, cond_region, args[:k])[0]

        def count_body(B, args):
            return _inline(B, body_region, args[:k])[0] + [_step(B, args[k], 1)]

        trips = _while(E, inits + [E.v(T.splat(0, _I64))], count_cond, count_body)[k]

        # the reverse loop over j = n-1 .. 0, carrying (j, state adjoints, initial values)
        def rev_cond(B, args):
            return [_compare(B, args[0], B.v(T.splat(0, _I64)), "GE")]

        def rev_body(B, args):
            j, adjoints, start = args[0], args[1:1 + len(floats)], args[1 + len(floats):]

            def redo_cond(R, a):
                return [_compare(R, a[0], a[1], "LT")]

            def redo_body(R, a):
                return [_step(R, a[0], 1), a[1]] + _inline(R, body_region, a[2:])[0]

            state = _while(B, [B.v(T.splat(0, _I64)), j] + list(start), redo_cond, redo_body)[2:]
            returned, copied, active = _inline_body(B, body_region, state, body_info, ctx.function)
            seeds: dict[SSAValue, SSAValue] = {}
            for i, d in zip(floats, adjoints):
                v = returned[i]
                seeds[v] = B.add(seeds[v], d) if v in seeds else d
            adjoint = hlo_ad.reverse_sweep(B, copied, _Mapped(active), seeds, ctx.function)
            # an argument the body returns unchanged passes its adjoint straight through
            new = [adjoint.get(state[i]) or B.zero(state[i].type) for i in floats]
            return [_step(B, j, -1)] + new + list(start)

        seeds = [dys[i] if dys[i] is not None else E.zero(inits[i].type) for i in floats]
        results = _while(E, [_step(E, trips, -1)] + seeds + inits, rev_cond, rev_body)
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
        body_info = self._body_activity(op)

        def cond(B, args):
            return _inline(B, cond_region, args[:k])[0]

        def body(B, args):
            returned, copied, active = _inline_body(B, body_region, args[:k], body_info, ctx.function)
            active.update(args[i] for i in floats)
            tangent = {args[i]: args[k + n] for n, i in enumerate(floats)}
            hlo_ad.forward_sweep(B, copied, _Mapped(active), tangent, ctx.function)
            return returned + [tangent.get(returned[i]) or B.zero(returned[i].type) for i in floats]

        start = inits + [tangents[i] if tangents[i] is not None else E.zero(inits[i].type) for i in floats]
        results = _while(E, start, cond, body)
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
            returned, copied, mapping = _inline(B, region, [])
            seeds: dict[SSAValue, SSAValue] = {}
            for v, d in zip(returned, dys):
                if d is not None:
                    seeds[v] = B.add(seeds[v], d) if v in seeds else d
            active = self._active_copy(ctx, region, mapping, captured)
            adjoint = hlo_ad.reverse_sweep(B, copied, _Mapped(active), seeds, ctx.function)
            return [adjoint.get(v) or B.zero(v.type) for v in wanted]

        return dict(zip(wanted, self._case(ctx, op, [v.type for v in wanted], branch)))

    def forward_captured(self, ctx, op, tangents, around):
        captured = [v for v in hlo_ad.captured_values(op) if v in around]
        floats = [i for i, r in enumerate(op.results) if hlo.is_float_tensor(r.type)]
        if not captured or not floats:
            return [None] * len(op.results)

        def branch(B, region):
            returned, copied, mapping = _inline(B, region, [])
            local = {v: around[v] for v in captured}
            active = self._active_copy(ctx, region, mapping, captured)
            hlo_ad.forward_sweep(B, copied, _Mapped(active), local, ctx.function)
            return [local.get(returned[i]) or B.zero(returned[i].type) for i in floats]

        results = self._case(ctx, op, [op.results[i].type for i in floats], branch)
        out: list[SSAValue | None] = [None] * len(op.results)
        for i, t in zip(floats, results):
            out[i] = t
        return out


REGISTRY.register(hlo.CaseOp, _Case())
