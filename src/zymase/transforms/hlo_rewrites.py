"""Algebraic rewrites of StableHLO, the first of the AD-aware ones (issue 28 item 3).

Derivative code is full of what these remove: adjoint accumulations that start from a
zero splat (``x + 0``), the transpose of a transpose when a transposed operand's adjoint
is transposed back, a broadcast of a broadcast or of a splat constant (seeds, and the
adjoint of reduce-sum of a broadcast), reshapes to the same shape, slices of slices and of concatenates (the adjoint of a
concatenate), transposes of broadcasts, float conversions there and back, and the
product of a zero-padded adjoint (a slice's) with a large operand, done on the window
only. Each pattern keeps
the value (no reassociation, no general ``x * 0 -> 0``: that is NaN for an infinite
``x``), so the rewritten program computes the same numbers; the liberties are ``-0.0 +
0.0 -> -0.0`` and the strong zeros of the padded product.

``simplify`` runs them greedily to a fixpoint, then xDSL's CSE and DCE (the StableHLO
ops are ``Pure``); zymase-opt names it ``stablehlo-simplify``. ``frontends/jax`` runs it
on every derivative module before XLA compiles it.
"""

from __future__ import annotations

from zymase.ir import (
    DenseIntOrFPElementsAttr,
    GreedyRewritePatternApplier,
    ModuleOp,
    Operation,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    SSAValue,
    make_context,
    xdsl_pass,
)
from zymase.ir import stablehlo as hlo


def splat_value(v: SSAValue) -> float | None:
    """The element of a splat ``stablehlo.constant`` (None for anything else)."""
    op = v.owner
    if not isinstance(op, hlo.ConstantOp) or not isinstance(op.value, DenseIntOrFPElementsAttr):
        return None
    values = op.value.get_values()
    if len(values) == 0 or any(x != values[0] for x in values[1:]):
        return None
    return values[0]


def _is_zero(v: SSAValue) -> bool:
    x = splat_value(v)
    return x is not None and x == 0  # -0.0 too: x + (-0.0) is x for every x


def _is_one(v: SSAValue) -> bool:
    x = splat_value(v)
    return x is not None and x == 1


def _replace(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    if value.type != op.results[0].type:
        return
    rewriter.replace(op, [], [value])


def _add_zero(op, rewriter):
    """x + 0 -> x, 0 + x -> x (+0.0: x + 0.0 is x except for x = -0.0, whose sign only a
    division by it could observe; derivative code accumulates into zeros this way)."""
    a, b = op.operands
    if _is_zero(b):
        _replace(rewriter, op, a)
    elif _is_zero(a):
        _replace(rewriter, op, b)


def _subtract_zero(op, rewriter):
    """x - 0 -> x."""
    if _is_zero(op.operands[1]):
        _replace(rewriter, op, op.operands[0])


def _multiply_one(op, rewriter):
    """x * 1 -> x, 1 * x -> x (exact: a unit seed times a partial)."""
    a, b = op.operands
    if _is_one(b):
        _replace(rewriter, op, a)
    elif _is_one(a):
        _replace(rewriter, op, b)


def _multiply_zero_padded(op, rewriter):
    """pad(x, 0) * y -> pad(x * slice(y), 0): the adjoint of a slice is a zero-padded
    tensor, and the product with the other operand needs only the unpadded window (a
    slice of a million-element product costs a thousand products, not a million). The
    padding is zero whatever y holds there: zymase's strong zeros (a zero adjoint times
    an infinite partial is 0), where IEEE arithmetic would give NaN."""
    for padded, other in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        pad = padded.owner
        if not isinstance(pad, hlo.PadOp) or not _is_zero(pad.operands[1]):
            continue
        low = list(pad.edge_padding_low.get_values())
        high = list(pad.edge_padding_high.get_values())
        interior = list(pad.interior_padding.get_values())
        if min(low + high) < 0:
            continue
        x = pad.operands[0]
        dims = list(other.type.get_shape())
        window = hlo.SliceOp.create(
            operands=[other], result_types=[x.type],
            properties={"start_indices": hlo.array(low), "limit_indices": hlo.array([n - h for n, h in zip(dims, high)]),
                        "strides": hlo.array([i + 1 for i in interior])})
        product = hlo.MultiplyOp.create(operands=[x, window.results[0]], result_types=[x.type])
        repadded = hlo.PadOp.create(operands=[product.results[0], pad.operands[1]], result_types=[op.results[0].type],
                                    properties=dict(pad.properties))
        rewriter.replace(op, [window, product, repadded])
        return


def _negate_negate(op, rewriter):
    """-(-x) -> x."""
    inner = op.operands[0].owner
    if isinstance(inner, hlo.NegateOp):
        _replace(rewriter, op, inner.operands[0])


def _transpose_transpose(op, rewriter):
    """transpose(transpose(x, p), q) -> transpose(x, p[q]), or x when that is the identity."""
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.TransposeOp):
        return
    p = list(inner.permutation.get_values())
    q = list(op.permutation.get_values())
    combined = [p[i] for i in q]
    x = inner.operands[0]
    if combined == list(range(len(combined))):
        _replace(rewriter, op, x)
        return
    rewriter.replace(op, hlo.TransposeOp.create(operands=[x], result_types=[op.results[0].type],
                                                   properties={"permutation": hlo.array(combined)}))


def _transpose_identity(op, rewriter):
    """transpose(x, identity) -> x."""
    perm = list(op.permutation.get_values())
    if perm == list(range(len(perm))):
        _replace(rewriter, op, op.operands[0])


def _broadcast(op, rewriter):
    """broadcast_in_dim folding: of a splat constant -> a splat of the result type; of a
    broadcast -> one broadcast with the composed dims; identity -> the operand."""
    x = op.operands[0]
    dims = list(op.broadcast_dimensions.get_values())
    out_type = op.results[0].type
    if x.type == out_type and dims == list(range(len(dims))):
        _replace(rewriter, op, x)
        return
    value = splat_value(x)
    if value is not None:
        rewriter.replace(op, hlo.ConstantOp.create(
            properties={"value": DenseIntOrFPElementsAttr.from_list(out_type, [value])}, result_types=[out_type]))
        return
    inner = x.owner
    if isinstance(inner, hlo.BroadcastInDimOp):
        inner_dims = list(inner.broadcast_dimensions.get_values())
        composed = [dims[d] for d in inner_dims]
        rewriter.replace(op, hlo.BroadcastInDimOp.create(
            operands=[inner.operands[0]], result_types=[out_type],
            properties={"broadcast_dimensions": hlo.array(composed)}))


def _reshape(op, rewriter):
    """reshape(x) of x's own shape -> x; reshape(reshape(x)) -> reshape(x)."""
    x = op.operands[0]
    if x.type == op.results[0].type:
        _replace(rewriter, op, x)
        return
    inner = x.owner
    if isinstance(inner, hlo.ReshapeOp):
        rewriter.replace(op, hlo.ReshapeOp.create(operands=[inner.operands[0]],
                                                     result_types=[op.results[0].type]))


def _convert_same(op, rewriter):
    """convert(x) to x's own type -> x."""
    if op.operands[0].type == op.results[0].type:
        _replace(rewriter, op, op.operands[0])


def _select_same(op, rewriter):
    """select(p, x, x) -> x."""
    if op.operands[1] is op.operands[2]:
        _replace(rewriter, op, op.operands[1])


def _slice(op, rewriter):
    """slice of the whole tensor -> x; slice(slice(x)) -> one slice; a slice that is
    exactly one operand of a concatenate -> that operand (the adjoint of a concatenate
    slices what the forward sweep concatenated)."""
    x = op.operands[0]
    start = list(op.start_indices.get_values())
    limit = list(op.limit_indices.get_values())
    strides = list(op.strides.get_values())
    if x.type == op.results[0].type and all(s == 0 for s in start) and all(st == 1 for st in strides):
        _replace(rewriter, op, x)
        return
    inner = x.owner
    if isinstance(inner, hlo.SliceOp):
        s0 = list(inner.start_indices.get_values())
        st0 = list(inner.strides.get_values())
        new_start = [a + b * c for a, b, c in zip(s0, start, st0)]
        new_strides = [a * b for a, b in zip(st0, strides)]
        new_limit = [ns + (n - 1) * nst + 1 for ns, n, nst in zip(new_start, op.results[0].type.get_shape(),
                                                                   new_strides)]
        rewriter.replace(op, hlo.SliceOp.create(
            operands=[inner.operands[0]], result_types=[op.results[0].type],
            properties={"start_indices": hlo.array(new_start), "limit_indices": hlo.array(new_limit),
                        "strides": hlo.array(new_strides)}))
        return
    if isinstance(inner, hlo.ConcatenateOp) and all(st == 1 for st in strides):
        dim = inner.dimension.value.data
        offset = 0
        for part in inner.operands:
            n = part.type.get_shape()[dim]
            others_full = all(start[d] == 0 and limit[d] == x.type.get_shape()[d]
                              for d in range(len(start)) if d != dim)
            if others_full and start[dim] == offset and limit[dim] == offset + n:
                _replace(rewriter, op, part)
                return
            offset += n


def _transpose_broadcast(op, rewriter):
    """transpose(broadcast_in_dim(x, d), p) -> broadcast_in_dim(x, p^-1[d])."""
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.BroadcastInDimOp):
        return
    perm = list(op.permutation.get_values())
    dims = [perm.index(d) for d in inner.broadcast_dimensions.get_values()]
    rewriter.replace(op, hlo.BroadcastInDimOp.create(
        operands=[inner.operands[0]], result_types=[op.results[0].type],
        properties={"broadcast_dimensions": hlo.array(dims)}))


def _convert_round_trip(op, rewriter):
    """convert(convert(x: f32) to f64) back to f32 -> x: widening is exact."""
    from zymase.ir import float_width, is_float_type

    inner = op.operands[0].owner
    if not isinstance(inner, hlo.ConvertOp):
        return
    x = inner.operands[0]
    a, b = x.type.element_type, inner.results[0].type.element_type
    if x.type == op.results[0].type and is_float_type(a) and is_float_type(b) and float_width(b) >= float_width(a):
        _replace(rewriter, op, x)


# patterns that take a liberty with IEEE arithmetic (the sign of a zero, strong zeros):
# fine in derivative code, not in the user's primal computation (``simplify(keep=...)``)
LIBERTIES = {_add_zero, _multiply_zero_padded}

PATTERNS = {
    hlo.AddOp: _add_zero,
    hlo.SubtractOp: _subtract_zero,
    hlo.MultiplyOp: (_multiply_one, _multiply_zero_padded),
    hlo.NegateOp: _negate_negate,
    hlo.TransposeOp: (_transpose_transpose, _transpose_identity, _transpose_broadcast),
    hlo.SliceOp: _slice,
    hlo.BroadcastInDimOp: _broadcast,
    hlo.ReshapeOp: _reshape,
    hlo.ConvertOp: (_convert_same, _convert_round_trip),
    hlo.SelectOp: _select_same,
}


class _Pattern(RewritePattern):
    def __init__(self, op_class, rewrite, keep: frozenset):
        self.op_class = op_class
        self.rewrite = rewrite
        self.keep = keep if rewrite in LIBERTIES else frozenset()

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if type(op) is self.op_class and op not in self.keep:
            self.rewrite(op, rewriter)


def _patterns(keep: frozenset) -> list[RewritePattern]:
    out = []
    for cls, fns in PATTERNS.items():
        for fn in fns if isinstance(fns, tuple) else (fns,):
            out.append(_Pattern(cls, fn, keep))
    return out


def simplify(module: ModuleOp, keep=frozenset()) -> None:
    """The rewrites above to a fixpoint, then CSE and DCE. The ops in ``keep`` (the
    primal ops of a derivative module) get only the exact rewrites, not ``LIBERTIES``."""
    PatternRewriteWalker(GreedyRewritePatternApplier(_patterns(frozenset(keep)))).rewrite_module(module)
    ctx = make_context()
    xdsl_pass("cse").apply(ctx, module)
    xdsl_pass("dce").apply(ctx, module)
