"""Rules for StableHLO's elementwise and data-movement ops (tensor programs from JAX).

Elementwise arithmetic and math reuse the dialect-neutral rules of ``rules/scalar.py``
(the StableHLO flavor spells them as tensor ops, see ``autodiff/hlo_flavor.py``). The
ops that move data have adjoints that are StableHLO again, each the transpose of the
linear map the op is: broadcast_in_dim <-> a reduce-sum over the broadcast dims,
slice <-> pad with zeros, concatenate <-> slices, dynamic_slice <->
dynamic_update_slice into zeros, transpose <-> the inverse transpose, dot_general
<-> two dot_generals, reduce-sum <-> broadcast, reduce-max <-> a select on equality
(ties share the adjoint equally, as in JAX); gather and scatter are in
``rules/stablehlo_scatter.py``. Ops whose derivative is zero (comparisons,
rounding, iota, constants) propagate nothing. custom_call dispatches on its target: the
LAPACK calls of ``jnp.linalg`` with a matrix-level rule (``rules/stablehlo_linalg.py``,
``rules/stablehlo_factorizations.py``) use it, the others are refused naming the JAX function. Anything else reaching an
active value has no rule and is refused by the engine (autodiff/hlo.py).
"""

from __future__ import annotations

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import REGISTRY, Rule
from zymase.autodiff.rules.scalar import (FADD, FMUL, FNEG, FREM, FSUB, MATH, ZERO, R,
                                          fdiv_divisor_partial_from_operands, fdiv_divisor_partial_from_quotient,
                                          fdiv_rule)
from zymase.errors import ZymaseError
from zymase.ir import location_of
from zymase.ir import chlo
from zymase.ir import stablehlo as hlo

# ----- elementwise ------------------------------------------------------------------
_LOGISTIC = R(lambda E, P, dy: E.mul(dy, E.mul(P.res(), E.sub(E.const_like(1.0, dy), P.res()))), name="logistic")
# rsqrt(x) = x^-1/2: d/dx = -1/2 x^-3/2 = -1/2 rsqrt(x)^3
_RSQRT = R(lambda E, P, dy: E.mul(E.mul(dy, E.const_like(-0.5, dy)), E.mul(P.res(), E.square(P.res()))),
           name="rsqrt")


def _divisor_partial(E, P, dy):
    """-dy a / b^2, from the quotient only where something else reads it already. XLA
    does not compute a division twice for two readers: a partial reading a quotient that
    only its consumer reads keeps it in memory and the division out of that consumer's
    fusion (``exp(-d / s)`` in a GP's kernel matrix: an extra pass over it, 4% of the
    gradient); where the quotient is read twice anyway it is in memory, and the
    dividend may not be (ADBench BA's projection by a depth: 13% slower from the
    operands)."""
    if len(list(P.op.results[0].uses)) > 1:
        return fdiv_divisor_partial_from_quotient(E, P, dy)
    return fdiv_divisor_partial_from_operands(E, P, dy)


_DIVIDE = fdiv_rule(_divisor_partial)


def _balanced(mine: int, other: int):
    """JAX's partial of maximum/minimum in operand ``mine``: 1 where it equals the result,
    halved where the other operand does too (a tie shares the derivative equally), times
    the adjoint (so a NaN adjoint stays NaN, as in JAX)."""

    def partial(E, P, dy):
        chosen = E.select(E.fcmp("oeq", P.arg(mine), P.res()), E.const_like(1.0, dy), E.zero(dy.type))
        shared = E.select(E.fcmp("oeq", P.arg(other), P.res()), E.const_like(2.0, dy), E.const_like(1.0, dy))
        return E.mul(dy, E.div(chosen, shared))

    return partial


def _power_exponent_partial(E, P, dy):
    """JAX's partial of ``x ** y`` in the exponent, ``x ** y * log(x)`` with log(x) taken
    as 0 where x is 0: a zero base's power is 0 for every positive exponent, so the
    derivative there is 0, where ``0 * log(0)`` was NaN (and ``1 * log(0)``, -inf, at y =
    0, where JAX also gives 0); a forward tangent of the base alone then stays finite."""
    x = P.arg(0)
    nonzero = E.select(E.fcmp("oeq", x, E.zero(x.type)), E.const_like(1.0, dy), x)
    return E.mul(dy, E.mul(P.res(), E.fn("log", nonzero)))


_POWER = R(MATH["pow"].partials[0], _power_exponent_partial, name="power", singular=MATH["pow"].singular,
           regular_if=MATH["pow"].regular_if, finite_value_if=MATH["pow"].finite_value_if)

_MAXIMUM = R(_balanced(0, 1), _balanced(1, 0), name="maximum", bounded=True)
_MINIMUM = R(_balanced(0, 1), _balanced(1, 0), name="minimum", bounded=True)

ELEMENTWISE_RULES = {
    "add": FADD, "subtract": FSUB, "multiply": FMUL, "divide": _DIVIDE, "negate": FNEG, "remainder": FREM,
    "exponential": MATH["exp"], "exponential_minus_one": MATH["expm1"], "log": MATH["log"],
    "log_plus_one": MATH["log1p"], "tanh": MATH["tanh"], "sqrt": MATH["sqrt"], "cbrt": MATH["cbrt"],
    "sine": MATH["sin"], "cosine": MATH["cos"], "tan": MATH["tan"], "abs": MATH["fabs"], "power": _POWER,
    "maximum": _MAXIMUM, "minimum": _MINIMUM, "atan2": MATH["atan2"], "logistic": _LOGISTIC,
    "rsqrt": _RSQRT, "floor": ZERO, "ceil": ZERO, "sign": ZERO, "round_nearest_even": ZERO,
    "round_nearest_afz": ZERO,
}
for _name, _rule in ELEMENTWISE_RULES.items():
    REGISTRY.register(hlo.ELEMENTWISE[_name], _rule)

# CHLO's math ops (ir/chlo.py) are the scalar functions of the same names; the others
# (erf_inv, digamma, bessel_i1e) have no rule and are refused as any op without one
_SQUARE = R(lambda E, P, dy: E.mul(dy, E.mul(E.const_like(2.0, dy), P.arg(0))), name="square")
CHLO_RULES = {
    "acos": MATH["acos"], "acosh": MATH["acosh"], "asin": MATH["asin"], "asinh": MATH["asinh"], "atan": MATH["atan"],
    "atanh": MATH["atanh"], "cosh": MATH["cosh"], "sinh": MATH["sinh"], "erf": MATH["erf"], "erfc": MATH["erfc"],
    "lgamma": MATH["lgamma"], "tan": MATH["tan"], "square": _SQUARE,
}
for _name, _rule in CHLO_RULES.items():
    REGISTRY.register(chlo.ELEMENTWISE[_name], _rule)


class _NoDerivative(Rule):
    """Constants, iota, comparisons, integer and boolean ops: nothing flows through."""

    def propagates(self, op, index):
        return False

    def reverse(self, ctx, op, dys):
        return [None] * len(op.operands)

    def forward(self, ctx, op, tangents):
        return [None] * len(op.results)


NO_DERIVATIVE = _NoDerivative()
for _cls in (hlo.ConstantOp, hlo.IotaOp, hlo.CompareOp, hlo.ELEMENTWISE["is_finite"], hlo.ELEMENTWISE["not"],
             hlo.ELEMENTWISE["and"], hlo.ELEMENTWISE["or"], hlo.ELEMENTWISE["xor"], chlo.ELEMENTWISE["is_inf"],
             chlo.ELEMENTWISE["is_neg_inf"], chlo.ELEMENTWISE["is_pos_inf"]):
    REGISTRY.register(_cls, NO_DERIVATIVE)


class Linear(Rule):
    """An op linear in the operands listed in ``through`` (the others are indices or
    shapes): the tangent is the op applied to the tangents (zeros for constant ones),
    the adjoint the transpose map, given per operand by ``transposes``."""

    through: tuple[int, ...] | None = (0,)  # None: every operand

    def _through(self, op) -> range | tuple[int, ...]:
        return range(len(op.operands)) if self.through is None else self.through

    def propagates(self, op, index):
        return index in self._through(op) and hlo.is_float_tensor(op.operands[index].type)

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        out = [None] * len(op.operands)
        for i in self._through(op):
            if dy is not None and ctx.wants(op.operands[i]):
                out[i] = self.transpose(ctx, op, i, dy)
        return out

    def forward(self, ctx, op, tangents):
        if all(tangents[i] is None for i in self._through(op)):
            return [None]
        operands = [ctx.primal(v) for v in op.operands]
        for i in self._through(op):
            operands[i] = tangents[i] if tangents[i] is not None else ctx.E.zero(op.operands[i].type)
        new = op.create(operands=operands, result_types=[r.type for r in op.results],
                        properties=dict(op.properties), regions=[r.clone() for r in op.regions])
        return [ctx.E.insert(new).results[0]]

    def transpose(self, ctx, op, i, dy):
        raise NotImplementedError


def _linear(*op_classes, through=(0,)):
    def deco(fn):
        rule = type(f"_{fn.__name__}", (Linear,), {"through": through, "transpose": staticmethod(fn)})()
        for cls in op_classes:
            REGISTRY.register(cls, rule)
        return rule

    return deco


@_linear(hlo.ReshapeOp)
def reshape_adjoint(ctx, op, i, dy):
    return T.reshape(ctx.E, dy, T.shape(op.operands[0]))


class _Barrier(Rule):
    """optimization_barrier: result i is operand i (any number of them), so adjoints and
    tangents pass through one to one."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def reverse(self, ctx, op, dys):
        return [d if ctx.wants(v) else None for v, d in zip(op.operands, dys)]

    def forward(self, ctx, op, tangents):
        return list(tangents)


REGISTRY.register(hlo.OptimizationBarrierOp, _Barrier())


@_linear(hlo.ConvertOp)
def convert_adjoint(ctx, op, i, dy):
    # float to float only: from an integer nothing flows (propagates is False)
    return ctx.E.fconv(dy, op.operands[0].type)


@_linear(hlo.ReducePrecisionOp)
def reduce_precision_adjoint(ctx, op, i, dy):
    """``lax.reduce_precision`` is linear for JAX (its tangent and cotangent are rounded
    the same way), so the derivative rounds the adjoint too."""
    return T.emit(ctx.E, hlo.ReducePrecisionOp, [dy], dy.type, exponent_bits=op.exponent_bits,
                  mantissa_bits=op.mantissa_bits)


@_linear(hlo.TransposeOp)
def transpose_adjoint(ctx, op, i, dy):
    perm = list(op.permutation.get_values())
    inverse = [perm.index(d) for d in range(len(perm))]
    return T.transpose(ctx.E, dy, inverse)


@_linear(hlo.ReverseOp)
def reverse_adjoint(ctx, op, i, dy):
    return T.emit(ctx.E, hlo.ReverseOp, [dy], op.operands[0].type, dimensions=op.dimensions)


@_linear(hlo.BroadcastInDimOp)
def broadcast_adjoint(ctx, op, i, dy):
    """Sum over the result dims the operand does not map to, and over the mapped dims
    where a size-1 operand dim was stretched; then put the kept dims in operand order."""
    x = op.operands[0]
    mapping = list(op.broadcast_dimensions.get_values())
    xs, ys = T.shape(x), T.shape(op.results[0])
    stretched = {mapping[k] for k in range(len(xs)) if xs[k] == 1 and ys[mapping[k]] != 1}
    summed = [d for d in range(len(ys)) if d not in mapping or d in stretched]
    reduced = T.reduce(ctx.E, dy, summed)
    kept = [(mapping[k], k) for k in range(len(xs)) if mapping[k] not in stretched]
    order = [k for _, k in sorted(kept)]  # operand dims in the reduced tensor's order
    reduced = T.transpose(ctx.E, reduced, [order.index(k) for k in sorted(order)])
    return T.reshape(ctx.E, reduced, xs)


@_linear(hlo.SliceOp)
def slice_adjoint(ctx, op, i, dy):
    start = list(op.start_indices.get_values())
    strides = list(op.strides.get_values())
    xs, ys = T.shape(op.operands[0]), T.shape(op.results[0])
    if 0 in ys:  # an empty slice (lax.associative_scan's odd halves): no last element to pad after
        return ctx.E.zero(op.operands[0].type)
    last = [s + (n - 1) * st for s, n, st in zip(start, ys, strides)]
    high = [x - 1 - l for x, l in zip(xs, last)]
    return T.pad(ctx.E, dy, start, high, [st - 1 for st in strides])


@_linear(hlo.ConcatenateOp, through=None)
def concatenate_adjoint(ctx, op, i, dy):
    dim = op.dimension.value.data
    offset = sum(T.shape(op.operands[j])[dim] for j in range(i))
    xs = T.shape(op.operands[i])
    start = [offset if d == dim else 0 for d in range(len(xs))]
    limit = [offset + n if d == dim else n for d, n in enumerate(xs)]
    return T.slice_(ctx.E, dy, start, limit)


@_linear(hlo.PadOp, through=(0, 1))
def pad_adjoint(ctx, op, i, dy):
    low = list(op.edge_padding_low.get_values())
    high = list(op.edge_padding_high.get_values())
    interior = list(op.interior_padding.get_values())
    if min(low + high) < 0:
        raise ZymaseError("negative padding has no adjoint yet", construct="stablehlo.pad",
                          hint="pad with non-negative widths, or slice separately")
    ys = T.shape(op.results[0])
    inner = T.slice_(ctx.E, dy, low, [n - h for n, h in zip(ys, high)], [it + 1 for it in interior])
    if i == 0:
        return inner
    # the padding value fills every element that is not an operand element
    E = ctx.E
    return E.sub(T.reduce(E, dy, range(len(ys))), T.reduce(E, inner, range(len(ys))))


@_linear(hlo.DynamicSliceOp)
def dynamic_slice_adjoint(ctx, op, i, dy):
    x = op.operands[0]
    zeros = ctx.E.zero(x.type)
    indices = [ctx.primal(v) for v in op.operands[1:]]
    return T.emit(ctx.E, hlo.DynamicUpdateSliceOp, [zeros, dy, *indices], x.type)


@_linear(hlo.DynamicUpdateSliceOp, through=(0, 1))
def dynamic_update_slice_adjoint(ctx, op, i, dy):
    E = ctx.E
    indices = [ctx.primal(v) for v in op.operands[2:]]
    update = op.operands[1]
    if i == 0:  # the operand keeps the adjoint outside the updated window
        return T.emit(E, hlo.DynamicUpdateSliceOp, [dy, E.zero(update.type), *indices], dy.type)
    return T.emit(E, hlo.DynamicSliceOp, [dy, *indices], update.type, slice_sizes=hlo.array(T.shape(update)))


class _Select(Rule):
    """select(p, a, b): the adjoint goes to the chosen side."""

    def propagates(self, op, index):
        return index > 0 and hlo.is_float_tensor(op.operands[index].type)

    def reverse(self, ctx, op, dys):
        dy, E = dys[0], ctx.E
        out = [None, None, None]
        if dy is None:
            return out
        p = ctx.primal(op.operands[0])
        if T.shape(op.operands[0]) != T.shape(dy):  # a scalar predicate
            p = T.broadcast(E, p, T.shape(dy), [])
        if ctx.wants(op.operands[1]):
            out[1] = E.select(p, dy, E.zero(dy.type))
        if ctx.wants(op.operands[2]):
            out[2] = E.select(p, E.zero(dy.type), dy)
        return out

    def forward(self, ctx, op, tangents):
        ta, tb = tangents[1], tangents[2]
        if ta is None and tb is None:
            return [None]
        E, t = ctx.E, op.results[0].type
        return [T.emit(E, hlo.SelectOp, [ctx.primal(op.operands[0]), ta or E.zero(t), tb or E.zero(t)], t)]


REGISTRY.register(hlo.SelectOp, _Select())


class _Clamp(Rule):
    """clamp(lo, x, hi): x's adjoint where lo < x < hi; lo's where x < lo < hi; hi's
    where x > hi (JAX's rule: nothing at the boundaries, and an empty interval gives
    lo nothing). Scalar bounds sum their adjoints."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _masks(self, ctx, op):
        E = ctx.E
        lo, x, hi = (ctx.primal(v) for v in op.operands)
        lo_b, hi_b = (T.broadcast(E, v, T.shape(x), []) if T.shape(v) != T.shape(x) else v for v in (lo, hi))
        inside = T.emit(E, hlo.ELEMENTWISE["and"], [E.fcmp("ogt", x, lo_b), E.fcmp("olt", x, hi_b)],
                        E.fcmp("ogt", x, lo_b).type)
        below = T.emit(E, hlo.ELEMENTWISE["and"], [E.fcmp("olt", x, lo_b), E.fcmp("olt", lo_b, hi_b)], inside.type)
        return inside, below, E.fcmp("ogt", x, hi_b)

    def reverse(self, ctx, op, dys):
        dy, E = dys[0], ctx.E
        if dy is None:
            return [None] * 3
        masks = self._masks(ctx, op)
        out = []
        for v, m in zip((op.operands[0], op.operands[1], op.operands[2]), (masks[1], masks[0], masks[2])):
            if not ctx.wants(v):
                out.append(None)
                continue
            d = E.select(m, dy, E.zero(dy.type))
            out.append(T.reduce(E, d, range(len(T.shape(dy)))) if T.shape(v) != T.shape(dy) else d)
        return out

    def forward(self, ctx, op, tangents):
        if all(t is None for t in tangents):
            return [None]
        E, t = ctx.E, op.results[0].type
        masks = self._masks(ctx, op)
        total = None
        for tan, m, v in zip((tangents[0], tangents[1], tangents[2]), (masks[1], masks[0], masks[2]), op.operands):
            if tan is None:
                continue
            tan = T.broadcast(E, tan, T.shape(op.results[0]), []) if T.shape(v) != T.shape(op.results[0]) else tan
            term = E.select(m, tan, E.zero(t))
            total = term if total is None else E.add(total, term)
        return [total]


REGISTRY.register(hlo.ClampOp, _Clamp())


# ----- contractions and reductions --------------------------------------------------
def _dot_numbers(op):
    d = op.dot_dimension_numbers
    return (hlo.dims_field(d, "lhs_batching_dimensions"), hlo.dims_field(d, "rhs_batching_dimensions"),
            hlo.dims_field(d, "lhs_contracting_dimensions"), hlo.dims_field(d, "rhs_contracting_dimensions"))


def _dot_operand_adjoint(E, dy, other, mine_rank, nb, my_batch, other_batch, my_contract, other_contract,
                         my_free_first: bool):
    """The adjoint of one dot_general operand: dy contracted with the other operand over
    the other's free dims, batched over the batch dims, then transposed into the
    operand's dim order. ``my_free_first``: the operand's free dims come first in dy
    (it is the lhs)."""
    rank_other = len(T.shape(other))
    other_free = [d for d in range(rank_other) if d not in other_batch and d not in other_contract]
    my_free = [d for d in range(mine_rank) if d not in my_batch and d not in my_contract]
    n_my, n_other = len(my_free), len(other_free)
    dy_other = list(range(nb + n_my, nb + n_my + n_other)) if my_free_first else list(range(nb, nb + n_other))
    result = T.dot_general(E, dy, other, list(range(nb)), other_batch, dy_other, other_free)
    # result dims: batch, my free dims, then the other's remaining (= contracting) dims in order
    remaining = sorted(other_contract)
    perm = [0] * mine_rank
    for j, d in enumerate(my_batch):
        perm[d] = j
    for j, d in enumerate(my_free):
        perm[d] = nb + j
    for k, d in enumerate(my_contract):
        perm[d] = nb + n_my + remaining.index(other_contract[k])
    return T.transpose(E, result, perm)


class _DotGeneral(Rule):
    """dot_general(a, b), bilinear: d a = dy . b, d b = dy . a (contracted over the free
    dims of the other operand), transposed back; the tangent is ta . b + a . tb."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def reverse(self, ctx, op, dys):
        dy, E = dys[0], ctx.E
        if dy is None:
            return [None, None]
        lb, rb, lc, rc = _dot_numbers(op)
        a, b = op.operands
        nb = len(lb)
        out = [None, None]
        if ctx.wants(a):
            out[0] = _dot_operand_adjoint(E, dy, ctx.primal(b), len(T.shape(a)), nb, lb, rb, lc, rc, True)
        if ctx.wants(b):
            out[1] = _dot_operand_adjoint(E, dy, ctx.primal(a), len(T.shape(b)), nb, rb, lb, rc, lc, False)
        for i, v in enumerate(op.operands):
            if out[i] is not None:
                out[i] = E.fconv(out[i], v.type) if out[i].type != v.type else out[i]
        return out

    def forward(self, ctx, op, tangents):
        E = ctx.E
        lb, rb, lc, rc = _dot_numbers(op)
        a, b = (ctx.primal(v) for v in op.operands)
        # the tangent has the product's type, as in JAX: a widening product's tangent
        # (bf16 operands, f32 result) was a bf16 tensor added to f32 ones (an invalid module)
        wide = op.results[0].type.element_type
        total = None
        if tangents[0] is not None:
            total = T.dot_general(E, tangents[0], b, lb, rb, lc, rc, element_type=wide)
        if tangents[1] is not None:
            term = T.dot_general(E, a, tangents[1], lb, rb, lc, rc, element_type=wide)
            total = term if total is None else E.add(total, term)
        return [total]


REGISTRY.register(hlo.DotGeneralOp, _DotGeneral())


def _region_kind(region) -> str | None:
    """``add``, ``maximum``, ``minimum`` for a two-argument body that combines its
    arguments with that op alone and returns it; None otherwise."""
    ops = list(region.block.ops)
    if len(ops) != 2 or not isinstance(ops[1], hlo.ReturnOp) or ops[1].operands[0] is not ops[0].results[0]:
        return None
    if set(ops[0].operands) != set(region.block.args) or len(ops[0].operands) != 2:
        return None
    return {hlo.AddOp: "add", hlo.MaximumOp: "maximum", hlo.MinimumOp: "minimum"}.get(type(ops[0]))


def reduction_kind(op) -> str | None:
    """The combiner of a one-input reduce (see _region_kind); None otherwise."""
    if len(op.operands) != 2 or len(op.results) != 1:
        return None
    return _region_kind(op.regions[0])


class _Reduce(Rule):
    """stablehlo.reduce with a sum, max or min body (one input). A sum's adjoint is dy
    broadcast back (and the sum of dy for the init value); a max/min's goes to the
    elements equal to the result, shared equally among ties, as JAX does."""

    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _kind(self, op) -> str:
        kind = reduction_kind(op)
        if kind is None:
            raise ZymaseError("this stablehlo.reduce has no derivative rule (only one-input sums, maxima "
                              "and minima have one)", construct="stablehlo.reduce",
                              hint="write the reduction with jnp.sum / jnp.max / jnp.min")
        return kind

    def _kept(self, op):
        dims = list(op.dimensions.get_values())
        return dims, [d for d in range(len(T.shape(op.operands[0]))) if d not in dims]

    def _chosen(self, ctx, op):
        """The elements equal to the result, as a float mask, and their count per output."""
        E = ctx.E
        x = ctx.primal(op.operands[0])
        dims, kept = self._kept(op)
        y = T.broadcast_to(E, ctx.primal(op.results[0]), x, kept)
        mask = E.select(E.fcmp("oeq", x, y), E.const_like(1.0, x), E.zero(x.type))
        return mask, T.reduce(E, mask, dims)

    def reverse(self, ctx, op, dys):
        dy, E = dys[0], ctx.E
        x, init = op.operands
        if dy is None:
            return [None, None]
        kind = self._kind(op)
        dims, kept = self._kept(op)
        out = [None, None]
        if kind == "add":
            if ctx.wants(x):
                out[0] = T.broadcast_to(E, dy, x, kept)
            if ctx.wants(init):
                out[1] = T.reduce(E, dy, range(len(T.shape(dy))))
            return out
        if ctx.wants(init):
            raise ZymaseError(f"the initial value of a {kind} reduction is differentiated", construct="stablehlo.reduce",
                              hint="start the reduction from a constant (jnp.max does)")
        mask, count = self._chosen(ctx, op)
        out[0] = E.mul(mask, T.broadcast_to(E, E.div(dy, count), x, kept))
        return out

    def forward(self, ctx, op, tangents):
        E = ctx.E
        kind = self._kind(op)
        dims, _ = self._kept(op)
        tx, tinit = tangents
        if kind == "add":
            total = T.reduce(E, tx, dims) if tx is not None else None
            if tinit is not None:
                t_init = T.broadcast(E, tinit, T.shape(op.results[0]), [])
                total = t_init if total is None else E.add(total, t_init)
            return [total]
        if tinit is not None:
            raise ZymaseError(f"the initial value of a {kind} reduction is differentiated", construct="stablehlo.reduce",
                              hint="start the reduction from a constant (jnp.max does)")
        mask, count = self._chosen(ctx, op)
        return [E.div(T.reduce(E, E.mul(mask, tx), dims), count)]


REGISTRY.register(hlo.ReduceOp, _Reduce())



# ----- custom_call: zymase's stop_gradient marker, LAPACK's matrix-level rules -----------
# what JAX function emits each custom_call JAX 0.10.2 lowers to on CPU (for refusals)
CUSTOM_CALL_SOURCES = {
    "lapack_spotrf_ffi": "jnp.linalg.cholesky", "lapack_dpotrf_ffi": "jnp.linalg.cholesky",
    "lapack_strsm_ffi": "jax.scipy.linalg.solve_triangular", "lapack_dtrsm_ffi": "jax.scipy.linalg.solve_triangular",
    "lapack_sgetrf_ffi": "jnp.linalg.solve / lu", "lapack_dgetrf_ffi": "jnp.linalg.solve / lu",
    "lapack_ssyevd_ffi": "jnp.linalg.eigh", "lapack_dsyevd_ffi": "jnp.linalg.eigh",
    "lapack_sgesdd_ffi": "jnp.linalg.svd", "lapack_dgesdd_ffi": "jnp.linalg.svd",
    "lapack_sgeqrf_ffi": "jnp.linalg.qr", "lapack_dgeqrf_ffi": "jnp.linalg.qr",
    "lapack_sorgqr_ffi": "jnp.linalg.qr", "lapack_dorgqr_ffi": "jnp.linalg.qr",
    "lapack_sgesvd_ffi": "jnp.linalg.svd", "lapack_dgesvd_ffi": "jnp.linalg.svd",
    "lapack_sgehrd_ffi": "jax.lax.linalg.hessenberg", "lapack_dgehrd_ffi": "jax.lax.linalg.hessenberg",
    "lapack_ssytrd_ffi": "jax.lax.linalg.tridiagonal", "lapack_dsytrd_ffi": "jax.lax.linalg.tridiagonal",
}


def _target_rule(op) -> Rule | None:
    """The matrix-level rule of a LAPACK custom_call (``rules/stablehlo_linalg.py``,
    ``rules/stablehlo_factorizations.py``)."""
    from zymase.autodiff.rules.stablehlo_factorizations import FACTORIZATION_RULES
    from zymase.autodiff.rules.stablehlo_linalg import LINALG_RULES

    if hlo.is_custom_rule(op):  # a user's jax.custom_vjp / custom_jvp
        from zymase.autodiff.rules.stablehlo_custom import CUSTOM_RULES
        return CUSTOM_RULES[op.call_target_name.data]
    target = op.call_target_name.data
    return LINALG_RULES.get(target) or FACTORIZATION_RULES.get(target)


class _CustomCall(Rule):
    """``jax.lax.stop_gradient``'s marker (``hlo.STOP_GRADIENT_TARGET``) passes no
    derivative; the LAPACK calls of ``rules/stablehlo_linalg.py`` use their rules; any
    other custom_call reaching an active value is refused, naming its target and the JAX
    function that emits it."""

    def propagates(self, op, index):
        if hlo.is_stop_gradient(op):
            return False
        rule = _target_rule(op)
        return rule.propagates(op, index) if rule is not None else hlo.is_float_tensor(op.operands[index].type)

    def _refuse(self, op):
        target = op.call_target_name.data
        source = CUSTOM_CALL_SOURCES.get(target)
        emitted = f" (emitted by {source})" if source else ""
        raise ZymaseError(f"no derivative rule for 'stablehlo.custom_call' @{target}{emitted}",
                          construct="stablehlo.custom_call", location=location_of(op),
                          hint="differentiate around it (jax.lax.stop_gradient), or write it with operations "
                               "zymase differentiates")

    def reverse(self, ctx, op, dys):
        if hlo.is_stop_gradient(op):
            return [None] * len(op.operands)
        rule = _target_rule(op)
        if rule is None:
            self._refuse(op)
        return rule.reverse(ctx, op, dys)

    def forward(self, ctx, op, tangents):
        if hlo.is_stop_gradient(op):
            return [None] * len(op.results)
        rule = _target_rule(op)
        if rule is None:
            self._refuse(op)
        return rule.forward(ctx, op, tangents)


REGISTRY.register(hlo.CustomCallOp, _CustomCall())
