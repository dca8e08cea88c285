"""Reverse mode of counted ``stablehlo.while`` loops (``counter < N`` from a constant by
1: ``lax.scan``, ``lax.fori_loop``), the way JAX reverses a scan: the loop that computes
the primal also stores, in row ``i`` of an ``N``-row tensor per value, the values of
iteration ``i`` that the body's adjoint reads (its residuals); the reverse loop runs
``j = N-1 .. 0`` and emits the adjoint of one body run on row ``j``.

Which values are stored is decided value by value, by what recomputing costs against
what storing costs (``recompute_cost``): storing an element is one write in the forward
loop and one read in the reverse (``STORE_COST``). A value the adjoint reads is stored
when the op producing it costs more per element than that (transcendental elementwise
ops, divisions, ``dot_general``, reductions, region ops); cheap elementwise ops and data
movement are recomputed in the reverse loop from what is stored (XLA fuses them into the
adjoint's kernels), down to the loop state, whose rows are stored where reached. The
counter is rebuilt from ``j``, values the body passes through unchanged (scan's input
sequence, closed-over weights) are read where they are. When the rows would pass
``RESIDUAL_BUDGET_BYTES``, only the loop state is stored and every body op the adjoint
needs is recomputed from it (the memory the old scheme needed, and its time).

The recording loop replaces the primal loop (its first results are the primal's), so
the primal is computed once. Loops with a data-dependent exit are reversed by
``stablehlo_control`` (recomputation from the initial values).
"""

from __future__ import annotations

import math

from zymase.autodiff import hlo as hlo_ad
from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.flavor import Emitter
from zymase.autodiff.rules.stablehlo_regions import I64, Mapped, build_block, constant, down_to_zero, inline, \
    inline_body, step, while_op
from zymase.ir import Block, BlockArgument, IntegerAttr, Operation, SSAValue, TensorType, is_side_effect_free
from zymase.ir import stablehlo as hlo

# residual rows (all stored values of all iterations) beyond which only the loop state is
# stored and the body recomputed from it
RESIDUAL_BUDGET_BYTES = 1 << 30

# flops per element of storing a value and reading it back: a value whose op costs more
# per element to recompute is stored
STORE_COST = 2.0

_TRANSCENDENTAL = frozenset(
    f"stablehlo.{n}" for n in ("exponential", "exponential_minus_one", "log", "log_plus_one", "tanh", "logistic",
                               "sine", "cosine", "tan", "atan2", "power", "sqrt", "rsqrt", "cbrt", "divide",
                               "remainder"))
_MOVEMENT = (hlo.ConstantOp, hlo.IotaOp, hlo.BroadcastInDimOp, hlo.ReshapeOp, hlo.TransposeOp, hlo.ReverseOp,
             hlo.SliceOp, hlo.DynamicSliceOp, hlo.DynamicUpdateSliceOp, hlo.ConcatenateOp, hlo.PadOp,
             hlo.GatherOp)
_CHEAP_ELEMENTWISE = (hlo.CompareOp, hlo.SelectOp, hlo.ClampOp, hlo.ConvertOp)


def _elements(v: SSAValue) -> int:
    return math.prod(v.type.get_shape())


def recompute_cost(op: Operation) -> float:
    """Flops per result element of recomputing ``op`` from its operands (estimates:
    a transcendental function 16, a contraction 2 per contracted element, a reduction
    1 per input element; region ops and ops of unknown cost infinite)."""
    if op.name in _TRANSCENDENTAL:
        return 16.0
    if isinstance(op, _MOVEMENT):
        return 0.0
    if op.name.removeprefix("stablehlo.") in hlo.ELEMENTWISE or isinstance(op, _CHEAP_ELEMENTWISE):
        return 1.0
    if isinstance(op, hlo.DotGeneralOp):
        lhs = op.operands[0].type.get_shape()
        contracted = hlo.dims_field(op.dot_dimension_numbers, "lhs_contracting_dimensions")
        return 2.0 * math.prod(lhs[d] for d in contracted)
    if isinstance(op, hlo.ReduceOp) and not any(inner.regions for inner in op.body.walk()):
        return sum(_elements(v) for v in op.operands) / max(1, sum(_elements(r) for r in op.results))
    return math.inf


def counted_trips(op: hlo.WhileOp) -> tuple[int, int, int] | None:
    """(counter position, start, trip count) of a loop whose condition is ``counter < N``
    for a constant N, counting by 1 from a constant (what ``lax.fori_loop`` and
    ``lax.scan`` emit); None for other loops."""
    cond, body = op.regions[0].blocks[0], op.regions[1].blocks[0]
    test = cond.last_op.operands[0].owner
    if not isinstance(test, hlo.CompareOp) or hlo.direction_of(test) != "LT":
        return None
    counter, bound = test.operands
    if counter not in cond.args or (limit := constant(bound)) is None:
        return None
    k = list(cond.args).index(counter)
    increment = body.last_op.operands[k].owner
    if not isinstance(increment, hlo.AddOp) or body.args[k] not in increment.operands:
        return None
    other = increment.operands[1] if increment.operands[0] is body.args[k] else increment.operands[0]
    if constant(other) != 1 or (start := constant(op.operands[k])) is None:
        return None
    return k, start, max(0, limit - start)


class _Plan:
    """What the forward loop stores for the reverse loop: rows of the loop state (by
    position) and residuals (values of the body copy in the reverse loop), and their
    total size over all iterations."""

    def __init__(self, state_rows: list[int], residuals: list[SSAValue], trips: int, state: list[SSAValue]):
        self.state_rows = state_rows
        self.residuals = residuals
        stored = [state[i] for i in state_rows] + residuals
        # (complex elements have no bitwidth attribute: two f64s)
        self.bytes = trips * sum(_elements(v) * getattr(v.type.element_type, "bitwidth", 128) // 8 for v in stored)


def _plan(copied: list[Operation], state: list[SSAValue], needed: list[SSAValue], k: int, passthrough: set[int],
          trips: int, state_only: bool) -> _Plan:
    """Cut the dataflow from the values the adjoint reads (``needed``) back to the loop
    state: a value is stored where its op costs more than ``STORE_COST`` per element (with
    ``state_only``, never: everything is recomputed from the state), otherwise its op is
    recomputed and its operands followed."""
    in_body = {r for op in copied for r in op.results} | set(state)
    position = {a: i for i, a in enumerate(state)}
    state_rows: set[int] = set()
    residuals: set[SSAValue] = set()
    seen: set[SSAValue] = set()
    stack = list(needed)
    while stack:
        v = stack.pop()
        if v in seen or v not in in_body:
            continue  # values from outside the loop are read where they are
        seen.add(v)
        if isinstance(v, BlockArgument):
            i = position[v]
            if i != k and i not in passthrough:
                state_rows.add(i)
            continue
        op = v.owner
        if not state_only and recompute_cost(op) > STORE_COST:
            residuals.add(v)
            continue
        stack += op.operands
        if op.regions:
            stack += hlo_ad.captured_values(op)
    order = {r: n for n, r in enumerate(r for op in copied for r in op.results)}
    return _Plan(sorted(state_rows), sorted(residuals, key=order.__getitem__), trips, state)


def _op_key(op: Operation):
    """What decides a pure op's results: its name, operands, result types and
    properties (None for ops with regions or effects, which are never merged)."""
    if op.regions or not is_side_effect_free(op):
        return None
    return (op.name, tuple(op.operands), tuple(r.type for r in op.results),
            tuple(sorted(op.properties.items())), tuple(sorted(op.attributes.items())))


def _merge_into_copy(block: Block, copied: list[Operation]) -> dict[SSAValue, SSAValue]:
    """Adjoint ops of ``block`` that repeat an op of the body copy ``copied`` (a rule
    recomputing a primal value: the jvp function of ``jax.nn.sigmoid``'s custom_jvp rule
    computes ``1 / (1 + exp(-x))`` again) read the copy's results instead, before the
    plan decides what the forward loop stores: the adjoint then reads the primal's
    value, stored when costly, instead of recomputing it from a cheaper stored operand
    in every reverse iteration (ADBench LSTM: six sigmoids, each a separate XLA kernel
    of the reverse body, since three kernels read it). Returns the merged values."""
    primal = set(copied)
    known = {key: op for op in copied if (key := _op_key(op)) is not None}
    merged: dict[SSAValue, SSAValue] = {}
    for op in list(block.ops):
        if op in primal or (key := _op_key(op)) is None or key not in known \
                or not known[key].is_before_in_block(op):
            continue
        for old, kept in zip(op.results, known[key].results):
            old.replace_all_uses_with(kept)
            merged[old] = kept
        op.detach()
        op.erase()
    return merged


def _read_by_adjoint(block: Block, copied: list[Operation], extra: list[SSAValue]) -> list[SSAValue]:
    """The values of ``block`` that ops other than the body copy ``copied`` read (the
    adjoint code, regions included), and those of ``extra`` (the adjoints returned)."""
    primal = set(copied)
    out = []
    for op in block.ops:
        if op in primal:
            continue
        for inner in op.walk():
            out += inner.operands
    return out + extra


class _Tapes:
    """The stored values packed by element type: one ``[N, total]`` tensor per type whose
    row ``i`` is the values of iteration ``i`` flattened end to end, so each iteration
    writes one row per type (one ``dynamic_update_slice``, into which XLA fuses the
    packing) and the reverse reads one (its slices fuse into the adjoint's kernels)."""

    def __init__(self, stored: list[SSAValue], trips: int):
        self.groups: dict = {}  # element type -> [(value, offset)]
        self.totals: dict = {}
        for v in stored:
            t = v.type.element_type
            self.groups.setdefault(t, []).append((v, self.totals.get(t, 0)))
            self.totals[t] = self.totals.get(t, 0) + _elements(v)
        self.types = [TensorType(t, [trips, total]) for t, total in self.totals.items()]

    def store(self, E: Emitter, tapes: list[SSAValue], values: dict[SSAValue, SSAValue], i: SSAValue):
        """The tapes with row ``i`` written: ``values`` maps each stored value to its
        value in this iteration."""
        out = []
        for tape, group in zip(tapes, self.groups.values()):
            flat = [T.reshape(E, values[v], [_elements(v)]) for v, _ in group]
            row = flat[0] if len(flat) == 1 else T.emit(
                E, hlo.ConcatenateOp, flat, TensorType(tape.type.element_type, [self.totals[tape.type.element_type]]),
                dimension=IntegerAttr(0, 64))
            one_row = T.reshape(E, row, [1, *row.type.get_shape()])
            out.append(T.emit(E, hlo.DynamicUpdateSliceOp, [tape, one_row, i, E.v(T.splat(0, I64))], tape.type))
        return out

    def load(self, E: Emitter, tapes: list[SSAValue], j: SSAValue) -> dict[SSAValue, SSAValue]:
        """Each stored value's row ``j``."""
        out = {}
        for tape, group in zip(tapes, self.groups.values()):
            total = self.totals[tape.type.element_type]
            one_row = T.emit(E, hlo.DynamicSliceOp, [tape, j, E.v(T.splat(0, I64))],
                             TensorType(tape.type.element_type, [1, total]), slice_sizes=hlo.array([1, total]))
            row = T.reshape(E, one_row, [total])
            for v, offset in group:
                piece = row if len(group) == 1 else T.slice_(E, row, [offset], [offset + _elements(v)])
                out[v] = T.reshape(E, piece, list(v.type.get_shape()))
        return out


def _affine_in(v: SSAValue, counter: SSAValue) -> tuple[int, int] | None:
    """(a, c) with ``v = a * counter + c`` (a = 1 or -1) for the index arithmetic JAX emits
    for a scan's rows (the counter, converted, offset, subtracted from a constant), else
    None. JAX's wrapping of negative indices, ``select(x < 0, x + n, x)``, is read as x:
    the caller checks that x stays within the rows."""
    if v is counter:
        return 1, 0
    op = v.owner
    if isinstance(op, hlo.ConvertOp):
        return _affine_in(op.operands[0], counter)
    if isinstance(op, (hlo.AddOp, hlo.SubtractOp)):
        x, y = op.operands
        if (cy := constant(y)) is not None and (inner := _affine_in(x, counter)) is not None:
            return inner[0], inner[1] + (cy if isinstance(op, hlo.AddOp) else -cy)
        if (cx := constant(x)) is not None and (inner := _affine_in(y, counter)) is not None:
            return (inner[0], inner[1] + cx) if isinstance(op, hlo.AddOp) else (-inner[0], cx - inner[1])
        return None
    if isinstance(op, hlo.SelectOp):
        test, _, otherwise = op.operands
        if isinstance(test.owner, hlo.CompareOp) and hlo.direction_of(test.owner) == "LT" \
                and test.owner.operands[0] is otherwise and constant(test.owner.operands[1]) == 0:
            return _affine_in(otherwise, counter)
    return None


def _written_once(body: Block, i: int, k: int, start: int, trips: int) -> bool:
    """Whether loop state ``i`` is a sequence the body only writes, one row per iteration,
    each row once (scan's stacked outputs): the body's only use of it is one
    ``dynamic_update_slice`` of a single row, returned as state ``i`` and read by nothing
    else, at a row that is the counter (plus or minus a constant) and stays within the
    rows. Its adjoint then needs no zeroing of the rows read: no later reverse iteration
    reads them again."""
    arg = body.args[i]
    uses = list(arg.uses)
    if len(uses) != 1 or not isinstance(update := uses[0].operation, hlo.DynamicUpdateSliceOp) \
            or uses[0].index != 0:
        return False
    result_uses = list(update.results[0].uses)
    if len(result_uses) != 1 or result_uses[0].operation is not body.last_op or result_uses[0].index != i:
        return False
    rows = arg.type.get_shape()[0] if arg.type.get_shape() else 0
    if tuple(update.operands[1].type.get_shape()[:1]) != (1,) or any(constant(v) is None for v in update.operands[3:]):
        return False
    affine = _affine_in(update.operands[2], body.args[k])
    if affine is None:
        return False
    first, last = (affine[0] * c + affine[1] for c in (start, start + trips - 1))
    return 0 <= min(first, last) and max(first, last) < rows


def reverse_counted(ctx, op: hlo.WhileOp, dys, k: int, start: int, trips: int, body_info) -> list[SSAValue | None]:
    """The adjoints of a counted loop's operands (see the module doc)."""
    E = ctx.E
    cond_region, body_region = op.regions
    body = body_region.blocks[0]
    inits = [ctx.primal(v) for v in op.operands]
    n = len(inits)
    # the carried adjoints: of the values the body's activity finds active
    floats = [i for i, v in enumerate(inits) if hlo.is_float_tensor(v.type) and (
        body_info.is_active(body.args[i]) or body_info.is_active(body.last_op.operands[i]))]
    wanted = [i for i in floats if ctx.wants(op.operands[i])]
    if trips == 0:
        return [dys[i] if i in wanted else None for i in range(n)]
    passthrough = {i for i in range(n) if body.last_op.operands[i] is body.args[i]}

    # the reverse loop's body, first on placeholder arguments for the loop state: one body
    # copy and its adjoint; what the adjoint reads decides what the forward loop stores
    block = Block(arg_types=[I64] + [inits[i].type for i in floats] + [v.type for v in inits])
    B = Emitter(E.flavor, E.module).at_end(block)
    j, adjoints, state = block.args[0], list(block.args[1:1 + len(floats)]), list(block.args[1 + len(floats):])
    returned, copied, active = inline_body(B, body_region, state, body_info, ctx.function)
    seeds: dict[SSAValue, SSAValue] = {}
    for i, d in zip(floats, adjoints):
        seeds[returned[i]] = B.add(seeds[returned[i]], d) if returned[i] in seeds else d
    adjoint = hlo_ad.reverse_sweep(B, copied, Mapped(active), seeds, ctx.function)
    merged = _merge_into_copy(block, copied)
    new = [merged.get(a, a) if (a := adjoint.get(state[i])) is not None else B.zero(state[i].type) for i in floats]
    # a written-once sequence whose initial value wants no adjoint (scan's stacked outputs)
    # passes its adjoint through unchanged: zeroing the row read each iteration cost XLA
    # two copies of the whole adjoint per iteration (ADBench LSTM)
    for m, i in enumerate(floats):
        if i not in wanted and _written_once(body, i, k, start, trips):
            new[m] = adjoints[m]
    needed = _read_by_adjoint(block, copied, new)
    plan = _plan(copied, state, needed, k, passthrough, trips, state_only=False)
    if plan.bytes > RESIDUAL_BUDGET_BYTES:
        plan = _plan(copied, state, needed, k, passthrough, trips, state_only=True)
    stored = [state[i] for i in plan.state_rows] + plan.residuals
    tapes = _Tapes(stored, trips)

    # the forward loop: the primal loop, storing row i of every stored value
    original = {c: o for c, o in zip((r for c in copied for r in c.results), (r for o in body.ops for r in o.results))}

    def record_body(R, args):
        index = R.v(hlo.ConvertOp.create(operands=[args[k]], result_types=[I64]))
        row = step(R, index, -start) if start else index
        returned, _, mapping = inline(R, body_region, args[:n])
        values = {state[i]: args[i] for i in plan.state_rows}
        values.update((v, mapping[original[v]]) for v in plan.residuals)
        return returned + tapes.store(R, args[n:], values, row)

    F = Emitter(E.flavor, E.module).before(op)
    types = [v.type for v in inits] + tapes.types
    cond = build_block(F, types, lambda R, args: inline(R, cond_region, args[:n])[0])
    recording = while_op(F, inits + [F.v(T.splat(0, t)) for t in tapes.types], cond,
                         build_block(F, types, record_body))
    for old, value in zip(op.results, recording.results):
        old.replace_all_uses_with(value)
    if ctx.primal_ops is not None and op in ctx.primal_ops:
        ctx.primal_ops.update(recording.walk())  # the user's computation: exact rewrites only
    op.detach()
    op.erase()

    # the reverse loop's body, finished: stored values read from row j, the counter
    # rebuilt from j, the rest of the primal copy recomputed where the adjoint reads it
    tape_args = [block.insert_arg(t, len(block.args)) for t in tapes.types]
    kept = sorted(passthrough)
    block.add_op(hlo.ReturnOp.create(operands=[step(B, j, -1), *new, *(state[i] for i in kept), *tape_args]))
    R = Emitter(E.flavor, E.module).before(block.first_op)
    for v, row in tapes.load(R, tape_args, j).items():
        v.replace_all_uses_with(row)
    if state[k].first_use is not None:
        counter = step(R, j, start) if start else j
        state[k].replace_all_uses_with(R.v(hlo.ConvertOp.create(operands=[counter], result_types=[state[k].type])))
    for c in reversed(copied):
        if c.parent is not None and all(r.first_use is None for r in c.results):
            c.detach()
            c.erase()
    for i, arg in enumerate(state):
        if i not in passthrough:
            assert arg.first_use is None, "a loop state value the reverse loop reads was neither stored nor rebuilt"
            block.erase_arg(arg)
    seeds_in = [dys[i] if dys[i] is not None else E.zero(inits[i].type) for i in floats]
    loop = while_op(E, [E.v(T.splat(trips - 1, I64)), *seeds_in, *(inits[i] for i in kept),
                        *recording.results[n:]],
                    build_block(E, [a.type for a in block.args], down_to_zero), block)
    out: list[SSAValue | None] = [None] * n
    for m, i in enumerate(floats):
        if i in wanted:
            out[i] = loop.results[1 + m]
    return out
