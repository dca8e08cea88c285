"""StableHLO rewrites of data movement: slices pushed through elementwise ops,
broadcasts, transposes and pads; slices of slices and of concatenates; concatenates of
adjacent slices; pads of pads, sums of pads, and the zero-padded adjoint of a slice
multiplied on its window only; transposes, broadcasts, reshapes and reverses composed or
dropped; splat constants moved; constant-index dynamic slices. Registered in
``hlo_rewrite_base.REWRITES``.

These matter most in derivative code: the adjoint of a slice is a zero pad, of a
concatenate a set of slices, of a broadcast a reduce, of a transpose a transpose. Every
pattern keeps the value bit for bit except ``pad(x, 0) * y`` (``liberty``: the padding's
zeros lose the sign ``0 * y`` gives them; it fires only for a ``y`` known to be finite,
since ``0 * inf`` is NaN, which jax.grad's derivative keeps).
"""

from __future__ import annotations

from zymase.ir import stablehlo as hlo
from zymase.transforms.hlo_rewrite_base import (
    ints,
    is_zero,
    known_finite,
    like,
    new,
    replace_by,
    replace_by_splat,
    rewrite,
    shape,
    single_use,
    splat_value,
)


def _slice(x, start, limit, strides, result_type=None):
    dims = [(hi - lo + s - 1) // s for lo, hi, s in zip(start, limit, strides)]
    return new(hlo.SliceOp, [x], result_type or like(x, dims), start_indices=hlo.array(start),
               limit_indices=hlo.array(limit), strides=hlo.array(strides))


def _slice_bounds(op):
    return ints(op.start_indices), ints(op.limit_indices), ints(op.strides)


# ----- splats move freely -------------------------------------------------------------
def _splat_moved(op, rewriter):
    c = splat_value(op.operands[0])
    if c is not None:
        replace_by_splat(rewriter, op, c)


for _cls in (hlo.ReshapeOp, hlo.TransposeOp, hlo.SliceOp, hlo.ReverseOp, hlo.BroadcastInDimOp):
    _short = _cls.name.split(".")[1]
    rewrite(_cls, f"{_short}_of_splat", f"{_short}(splat c) -> splat c")(_splat_moved)


# ----- transpose ----------------------------------------------------------------------
@rewrite(hlo.TransposeOp, "transpose_identity", "transpose(x, identity) -> x")
def transpose_identity(op, rewriter):
    perm = ints(op.permutation)
    if perm == list(range(len(perm))):
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.TransposeOp, "transpose_transpose", "transpose(transpose(x, p), q) -> transpose(x, p[q])")
def transpose_transpose(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.TransposeOp):
        return
    p, q = ints(inner.permutation), ints(op.permutation)
    rewriter.replace(op, new(hlo.TransposeOp, [inner.operands[0]], op.results[0].type,
                             permutation=hlo.array([p[i] for i in q])))


@rewrite(hlo.TransposeOp, "transpose_broadcast", "transpose(broadcast_in_dim(x, d), p) -> broadcast_in_dim(x, p^-1[d])")
def transpose_broadcast(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.BroadcastInDimOp):
        return
    perm = ints(op.permutation)
    dims = [perm.index(d) for d in ints(inner.broadcast_dimensions)]
    rewriter.replace(op, new(hlo.BroadcastInDimOp, [inner.operands[0]], op.results[0].type,
                             broadcast_dimensions=hlo.array(dims)))


# ----- broadcast / reshape / reverse --------------------------------------------------
@rewrite(hlo.BroadcastInDimOp, "broadcast_identity", "broadcast_in_dim(x : T, identity) to T -> x")
def broadcast_identity(op, rewriter):
    dims = ints(op.broadcast_dimensions)
    if op.operands[0].type == op.results[0].type and dims == list(range(len(dims))):
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.BroadcastInDimOp, "broadcast_broadcast", "broadcast_in_dim(broadcast_in_dim(x, d), e) -> "
         "broadcast_in_dim(x, e[d])")
def broadcast_broadcast(op, rewriter):
    inner = op.operands[0].owner
    if isinstance(inner, hlo.BroadcastInDimOp):
        dims = ints(op.broadcast_dimensions)
        composed = [dims[d] for d in ints(inner.broadcast_dimensions)]
        rewriter.replace(op, new(hlo.BroadcastInDimOp, [inner.operands[0]], op.results[0].type,
                                 broadcast_dimensions=hlo.array(composed)))


@rewrite(hlo.ReshapeOp, "reshape_identity", "reshape(x : T) to T -> x")
def reshape_identity(op, rewriter):
    if op.operands[0].type == op.results[0].type:
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.ReshapeOp, "reshape_reshape", "reshape(reshape(x)) -> reshape(x)")
def reshape_reshape(op, rewriter):
    inner = op.operands[0].owner
    if isinstance(inner, hlo.ReshapeOp):
        rewriter.replace(op, new(hlo.ReshapeOp, [inner.operands[0]], op.results[0].type))


@rewrite(hlo.ReverseOp, "reverse_reverse", "reverse(reverse(x, a), b) -> reverse(x, a xor b), or x")
def reverse_reverse(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.ReverseOp):
        return
    dims = sorted(set(ints(inner.dimensions)) ^ set(ints(op.dimensions)))
    if not dims:
        replace_by(rewriter, op, inner.operands[0])
    else:
        rewriter.replace(op, new(hlo.ReverseOp, [inner.operands[0]], op.results[0].type, dimensions=hlo.array(dims)))


@rewrite(hlo.ReverseOp, "reverse_unit_dims", "reverse(x, dims of size 1) -> x")
def reverse_unit_dims(op, rewriter):
    dims = ints(op.dimensions)
    kept = [d for d in dims if shape(op.operands[0])[d] != 1]
    if not kept:
        replace_by(rewriter, op, op.operands[0])
    elif len(kept) < len(dims):
        rewriter.replace(op, new(hlo.ReverseOp, [op.operands[0]], op.results[0].type, dimensions=hlo.array(kept)))


# ----- slices ---------------------------------------------------------------------------
@rewrite(hlo.SliceOp, "slice_whole", "slice(x, 0:n:1) -> x")
def slice_whole(op, rewriter):
    start, _, strides = _slice_bounds(op)
    if op.operands[0].type == op.results[0].type and not any(start) and all(s == 1 for s in strides):
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.SliceOp, "slice_slice", "slice(slice(x, a:b:s), c:d:t) -> slice(x, a+c*s : .. : s*t)")
def slice_slice(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.SliceOp) or 0 in shape(op.results[0]):
        return  # an empty slice (lax.associative_scan's odd halves) has no last element to end after
    start, _, strides = _slice_bounds(op)
    s0, _, st0 = _slice_bounds(inner)
    new_start = [a + b * c for a, b, c in zip(s0, start, st0)]
    new_strides = [a * b for a, b in zip(st0, strides)]
    new_limit = [ns + (n - 1) * nst + 1 for ns, n, nst in zip(new_start, shape(op.results[0]), new_strides)]
    rewriter.replace(op, _slice(inner.operands[0], new_start, new_limit, new_strides, op.results[0].type))


@rewrite(hlo.SliceOp, "slice_concatenate", "slice(concatenate(a, b, ...)) within one operand -> slice of it")
def slice_concatenate(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.ConcatenateOp):
        return
    start, limit, strides = _slice_bounds(op)
    dim = inner.dimension.value.data
    offset = 0
    for part in inner.operands:
        n = shape(part)[dim]
        if offset <= start[dim] and limit[dim] <= offset + n:
            s = [v - offset if d == dim else v for d, v in enumerate(start)]
            lim = [v - offset if d == dim else v for d, v in enumerate(limit)]
            sliced = _slice(part, s, lim, strides, op.results[0].type)
            if sliced.results[0].type == part.type and s == [0] * len(s) and all(t == 1 for t in strides):
                replace_by(rewriter, op, part)
            else:
                rewriter.replace(op, sliced)
            return
        offset += n


_ELEMENTWISE = tuple(hlo.ELEMENTWISE.values()) + (hlo.ConvertOp, hlo.CompareOp)


@rewrite(hlo.SliceOp, "slice_elementwise", "slice(f(a, b)) -> f(slice(a), slice(b)) for elementwise f used once")
def slice_elementwise(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, _ELEMENTWISE) or not single_use(op.operands[0]) or len(inner.results) != 1:
        return
    if any(shape(v) != shape(op.operands[0]) for v in inner.operands):
        return
    start, limit, strides = _slice_bounds(op)
    sliced = [_slice(v, start, limit, strides) for v in inner.operands]
    result_type = like(inner.results[0], shape(op.results[0]))
    applied = inner.create(operands=[s.results[0] for s in sliced], result_types=[result_type],
                           properties=dict(inner.properties))
    rewriter.replace(op, [*sliced, applied])


@rewrite(hlo.SliceOp, "slice_broadcast", "slice(broadcast_in_dim(x)) -> broadcast_in_dim(slice(x))")
def slice_broadcast(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.BroadcastInDimOp):
        return
    x = inner.operands[0]
    dims = ints(inner.broadcast_dimensions)
    start, limit, strides = _slice_bounds(op)
    xs = shape(x)
    s = [0 if xs[k] == 1 else start[m] for k, m in enumerate(dims)]
    lim = [1 if xs[k] == 1 else limit[m] for k, m in enumerate(dims)]
    st = [1 if xs[k] == 1 else strides[m] for k, m in enumerate(dims)]
    sliced = _slice(x, s, lim, st)
    if sliced.results[0].type == x.type and not any(s):
        # nothing to take from x: the slice only shrinks the broadcast
        rewriter.replace(op, new(hlo.BroadcastInDimOp, [x], op.results[0].type, broadcast_dimensions=hlo.array(dims)))
        return
    rewriter.replace(op, [sliced, new(hlo.BroadcastInDimOp, [sliced.results[0]], op.results[0].type,
                                      broadcast_dimensions=hlo.array(dims))])


@rewrite(hlo.SliceOp, "slice_transpose", "slice(transpose(x, p)) -> transpose(slice(x), p)")
def slice_transpose(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.TransposeOp):
        return
    perm = ints(inner.permutation)
    start, limit, strides = _slice_bounds(op)
    rank = len(perm)
    s, lim, st = [0] * rank, [0] * rank, [1] * rank
    for i, p in enumerate(perm):
        s[p], lim[p], st[p] = start[i], limit[i], strides[i]
    sliced = _slice(inner.operands[0], s, lim, st)
    rewriter.replace(op, [sliced, new(hlo.TransposeOp, [sliced.results[0]], op.results[0].type,
                                      permutation=hlo.array(perm))])


def _plain_pad(pad) -> bool:
    """A pad with non-negative edges and no interior padding."""
    return min(ints(pad.edge_padding_low) + ints(pad.edge_padding_high)) >= 0 and not any(ints(pad.interior_padding))


@rewrite(hlo.SliceOp, "slice_pad", "slice(pad(x, c)) inside x's window -> slice(x)")
def slice_pad(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.PadOp) or not _plain_pad(inner):
        return
    start, limit, strides = _slice_bounds(op)
    low, x = ints(inner.edge_padding_low), inner.operands[0]
    if all(lo <= s and li <= lo + n for s, li, lo, n in zip(start, limit, low, shape(x))):
        rewriter.replace(op, _slice(x, [s - lo for s, lo in zip(start, low)], [li - lo for li, lo in zip(limit, low)],
                                    strides, op.results[0].type))


@rewrite(hlo.DynamicSliceOp, "dynamic_slice_constant", "dynamic_slice(x, constant i) -> slice(x, clamp(i))")
def dynamic_slice_constant(op, rewriter):
    starts = [splat_value(v) for v in op.operands[1:]]
    if any(s is None for s in starts):
        return
    sizes = ints(op.slice_sizes)
    clamped = [min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape(op.operands[0]), sizes)]
    rewriter.replace(op, _slice(op.operands[0], clamped, [c + k for c, k in zip(clamped, sizes)], [1] * len(sizes),
                                op.results[0].type))


@rewrite(hlo.DynamicUpdateSliceOp, "dynamic_update_slice_whole", "dynamic_update_slice(x, u : type of x, i) -> u")
def dynamic_update_slice_whole(op, rewriter):
    if op.operands[1].type == op.results[0].type:
        replace_by(rewriter, op, op.operands[1])


# ----- concatenate ------------------------------------------------------------------------
@rewrite(hlo.ConcatenateOp, "concatenate_one", "concatenate(x) -> x")
def concatenate_one(op, rewriter):
    if len(op.operands) == 1:
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.ConcatenateOp, "concatenate_nested", "concatenate(concatenate(a, b), c) -> concatenate(a, b, c)")
def concatenate_nested(op, rewriter):
    dim = op.dimension.value.data
    parts, changed = [], False
    for v in op.operands:
        inner = v.owner
        if isinstance(inner, hlo.ConcatenateOp) and inner.dimension.value.data == dim:
            parts += list(inner.operands)
            changed = True
        else:
            parts.append(v)
    if changed:
        rewriter.replace(op, hlo.ConcatenateOp.create(operands=parts, result_types=[op.results[0].type],
                                                      properties=dict(op.properties)))


@rewrite(hlo.ConcatenateOp, "concatenate_slices", "concatenate(slice(x, a:b), slice(x, b:c)) -> slice(x, a:c)")
def concatenate_slices(op, rewriter):
    dim = op.dimension.value.data
    slices = [v.owner for v in op.operands]
    if len(slices) < 2 or not all(isinstance(s, hlo.SliceOp) for s in slices):
        return
    x = slices[0].operands[0]
    bounds = [_slice_bounds(s) for s in slices]
    if any(s.operands[0] is not x for s in slices) or any(t != 1 for _, _, st in bounds for t in st):
        return
    first_start, first_limit, _ = bounds[0]
    for (s0, l0, _), (s1, l1, _) in zip(bounds, bounds[1:]):
        others_same = all((s0[d], l0[d]) == (s1[d], l1[d]) for d in range(len(s0)) if d != dim)
        if not others_same or l0[dim] != s1[dim]:
            return
    limit = list(first_limit)
    limit[dim] = bounds[-1][1][dim]
    rewriter.replace(op, _slice(x, first_start, limit, [1] * len(limit), op.results[0].type))


@rewrite(hlo.ConcatenateOp, "concatenate_splats", "concatenate(splat c, splat c) -> splat c")
def concatenate_splats(op, rewriter):
    values = [splat_value(v) for v in op.operands]
    if values[0] is not None and all(v == values[0] for v in values) and hlo.is_float_tensor(op.results[0].type):
        replace_by_splat(rewriter, op, values[0])


# ----- pads ---------------------------------------------------------------------------
@rewrite(hlo.PadOp, "pad_nothing", "pad(x, c, 0, 0, 0) -> x")
def pad_nothing(op, rewriter):
    if not any(ints(op.edge_padding_low) + ints(op.edge_padding_high) + ints(op.interior_padding)):
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.PadOp, "pad_pad", "pad(pad(x, c, l1, h1), c, l2, h2) -> pad(x, c, l1+l2, h1+h2)")
def pad_pad(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.PadOp) or not _plain_pad(inner) or not _plain_pad(op):
        return
    c1, c2 = inner.operands[1], op.operands[1]
    if c1 is not c2 and (splat_value(c1) is None or splat_value(c1) != splat_value(c2)):
        return
    low = [a + b for a, b in zip(ints(inner.edge_padding_low), ints(op.edge_padding_low))]
    high = [a + b for a, b in zip(ints(inner.edge_padding_high), ints(op.edge_padding_high))]
    rewriter.replace(op, new(hlo.PadOp, [inner.operands[0], c2], op.results[0].type, edge_padding_low=hlo.array(low),
                             edge_padding_high=hlo.array(high), interior_padding=op.interior_padding))


def _zero_pad(v):
    pad = v.owner
    if isinstance(pad, hlo.PadOp) and is_zero(pad.operands[1]) and min(
            ints(pad.edge_padding_low) + ints(pad.edge_padding_high)) >= 0:
        return pad
    return None


@rewrite(hlo.AddOp, "add_pads", "pad(x, 0) + pad(y, 0) (same widths) -> pad(x + y, 0)")
def add_pads(op, rewriter):
    p, q = (_zero_pad(v) for v in op.operands)
    if p is None or q is None or p.operands[0].type != q.operands[0].type:
        return
    if any(ints(getattr(p, f)) != ints(getattr(q, f)) for f in ("edge_padding_low", "edge_padding_high",
                                                                 "interior_padding")):
        return
    total = new(hlo.AddOp, [p.operands[0], q.operands[0]], p.operands[0].type)
    rewriter.replace(op, [total, hlo.PadOp.create(operands=[total.results[0], p.operands[1]],
                                                  result_types=[op.results[0].type], properties=dict(p.properties))])


@rewrite(hlo.MultiplyOp, "multiply_zero_padded", "pad(x, 0) * y, y known finite -> pad(x * slice(y), 0)",
         liberty=True)
def multiply_zero_padded(op, rewriter):
    """The adjoint of a slice is a zero-padded tensor, and its product with the other
    operand needs only the unpadded window (a slice of a million-element product costs
    a thousand products, not a million). Only for a y that ``known_finite`` proves
    finite: in the padding, ``0 * y`` is NaN where y is infinite or NaN, and jax.grad's
    derivative, which zymase's must equal, has that NaN (JAX has no strong zeros)."""
    for padded, other in ((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0])):
        pad = _zero_pad(padded)
        if pad is None or not known_finite(other):
            continue
        low, high = ints(pad.edge_padding_low), ints(pad.edge_padding_high)
        interior = ints(pad.interior_padding)
        x = pad.operands[0]
        window = _slice(other, low, [n - h for n, h in zip(shape(other), high)], [i + 1 for i in interior], x.type)
        product = new(hlo.MultiplyOp, [x, window.results[0]], x.type)
        repadded = hlo.PadOp.create(operands=[product.results[0], pad.operands[1]], result_types=[op.results[0].type],
                                    properties=dict(pad.properties))
        rewriter.replace(op, [window, product, repadded])
        return
