"""StableHLO rewrites of reductions, contractions and library calls: a reduce of a
transpose, of a reshape, of a broadcast, of a zero pad, of a negation, of a product with
a factor constant along the summed dims; a dot_general whose operand is a transpose
takes the transpose into its dimension numbers; a LAPACK call repeating an earlier one
reuses its results. Registered in ``hlo_rewrite_base.REWRITES``.

A reduce-sum's order of additions is XLA's choice, so a rewritten sum equals the original
up to rounding (the numeric tests compare these with a tolerance); the maximum and the
minimum, and dot_general, are unchanged. Taking a factor out of a sum (``reduce_scaled``,
``reduce_scaled_reuse``) rounds differently too, and where the factor is infinite it
can give an infinity where the sum of products had a NaN (``0 * inf``): derivative code
only (``liberty``).
"""

from __future__ import annotations

from zymase.ir import stablehlo as hlo
from zymase.transforms.hlo_rewrite_base import (
    float_splat,
    ints,
    is_zero,
    like,
    make_splat,
    new,
    rewrite,
    shape,
    single_use,
)


def _kind(op) -> str | None:
    from zymase.autodiff.rules.stablehlo import reduction_kind

    return reduction_kind(op)


def _reduce(op, x, dims, result_type):
    """``op`` (a one-input reduce) applied to ``x`` over ``dims``."""
    return hlo.ReduceOp.create(operands=[x, op.operands[1]], result_types=[result_type],
                               properties={"dimensions": hlo.array(sorted(dims))},
                               regions=[op.regions[0].clone()])


@rewrite(hlo.ReduceOp, "reduce_transpose", "reduce(transpose(x, p), dims) -> transpose(reduce(x, p[dims]))",
         reorders_sum=True)
def reduce_transpose(op, rewriter):
    inner = op.operands[0].owner
    if _kind(op) is None or not isinstance(inner, hlo.TransposeOp):
        return
    perm = ints(inner.permutation)
    dims = ints(op.dimensions)
    x = inner.operands[0]
    x_dims = sorted(perm[d] for d in dims)
    kept_x = [d for d in range(len(perm)) if d not in x_dims]
    kept = [i for i in range(len(perm)) if i not in dims]  # result dim j is transposed dim kept[j]
    reduced = _reduce(op, x, x_dims, like(x, [shape(x)[d] for d in kept_x]))
    order = [kept_x.index(perm[i]) for i in kept]
    if order == list(range(len(order))):
        rewriter.replace(op, reduced)
    else:
        rewriter.replace(op, [reduced, new(hlo.TransposeOp, [reduced.results[0]], op.results[0].type,
                                           permutation=hlo.array(order))])


@rewrite(hlo.ReduceOp, "reduce_reshape", "reduce(reshape(x), all dims) -> reduce(x, all dims)", reorders_sum=True)
def reduce_reshape(op, rewriter):
    inner = op.operands[0].owner
    if _kind(op) is None or not isinstance(inner, hlo.ReshapeOp):
        return
    if sorted(ints(op.dimensions)) == list(range(len(shape(op.operands[0])))):
        x = inner.operands[0]
        rewriter.replace(op, _reduce(op, x, range(len(shape(x))), op.results[0].type))


@rewrite(hlo.ReduceOp, "reduce_broadcast", "reduce_sum(broadcast_in_dim(x), added dims) -> "
         "broadcast_in_dim(x * n) (n: the number of summed copies)", reorders_sum=True)
def reduce_broadcast(op, rewriter):
    inner = op.operands[0].owner
    if _kind(op) != "add" or not is_zero(op.operands[1]) or not isinstance(inner, hlo.BroadcastInDimOp):
        return
    if not hlo.is_float_tensor(op.results[0].type):  # the count is a float splat
        return
    mapping = ints(inner.broadcast_dimensions)
    dims = ints(op.dimensions)
    if set(dims) & set(mapping):
        return
    x = inner.operands[0]
    count = 1
    for d in dims:
        count *= shape(op.operands[0])[d]
    kept = [i for i in range(len(shape(op.operands[0]))) if i not in dims]
    n = make_splat(float(count), x.type)
    scaled = new(hlo.MultiplyOp, [x, n.results[0]], x.type)
    spread = new(hlo.BroadcastInDimOp, [scaled.results[0]], op.results[0].type,
                 broadcast_dimensions=hlo.array([kept.index(m) for m in mapping]))
    rewriter.replace(op, [n, scaled, spread])


@rewrite(hlo.ReduceOp, "reduce_zero_pad", "reduce_sum(pad(x, 0), dims covering the padding) -> reduce_sum(x, dims)",
         reorders_sum=True)
def reduce_zero_pad(op, rewriter):
    inner = op.operands[0].owner
    if _kind(op) != "add" or not is_zero(op.operands[1]) or not isinstance(inner, hlo.PadOp):
        return
    if not is_zero(inner.operands[1]) or min(ints(inner.edge_padding_low) + ints(inner.edge_padding_high)) < 0:
        return
    dims = ints(op.dimensions)
    padded = {d for d, (lo, hi, it) in enumerate(zip(ints(inner.edge_padding_low), ints(inner.edge_padding_high),
                                                     ints(inner.interior_padding))) if lo or hi or it}
    if not padded <= set(dims):
        return
    rewriter.replace(op, _reduce(op, inner.operands[0], dims, op.results[0].type))


def _sum(op) -> bool:
    """Whether ``op`` is a float reduce-sum from zero (the adjoint of a broadcast)."""
    return _kind(op) == "add" and is_zero(op.operands[1]) and hlo.is_float_tensor(op.results[0].type)


@rewrite(hlo.ReduceOp, "reduce_negate", "reduce_sum(-x, dims) -> -reduce_sum(x, dims)")
def reduce_negate(op, rewriter):
    inner = op.operands[0].owner
    if not _sum(op) or not isinstance(inner, hlo.NegateOp) or not single_use(op.operands[0]):
        return
    summed = _reduce(op, inner.operands[0], ints(op.dimensions), op.results[0].type)
    rewriter.replace(op, [summed, new(hlo.NegateOp, [summed.results[0]], op.results[0].type)])


def _factor_outside(v, dims):
    """When ``v`` is constant along ``dims`` (a splat, or a broadcast_in_dim that adds
    every dim of ``dims``): ``(b, mapping)``, ``v`` being ``b`` broadcast along
    ``mapping`` (``b`` None for a splat). Otherwise None."""
    if float_splat(v) is not None:
        return None, []
    op = v.owner
    if isinstance(op, hlo.BroadcastInDimOp) and not set(ints(op.broadcast_dimensions)) & set(dims):
        return op.operands[0], ints(op.broadcast_dimensions)
    return None


def _factor_on(reduced, b, mapping, kept):
    """The ops giving ``b`` (broadcast along ``mapping`` of the full shape) on the
    reduced shape ``reduced`` (whose dim j is the full shape's dim ``kept[j]``)."""
    dims = [kept.index(m) for m in mapping]
    if b.type == reduced and dims == list(range(len(dims))):
        return [], b
    spread = new(hlo.BroadcastInDimOp, [b], reduced, broadcast_dimensions=hlo.array(dims))
    return [spread], spread.results[0]


@rewrite(hlo.ReduceOp, "reduce_scaled", "reduce_sum(x * broadcast_in_dim(b), dims not in b's) -> "
         "reduce_sum(x, dims) * broadcast_in_dim(b); the same for a splat b", liberty=True, reorders_sum=True)
def reduce_scaled(op, rewriter):
    """A factor constant along the summed dims comes out of the sum: one multiply per
    result element instead of one per summed element, and the broadcast factor is no
    longer read at the full size (XLA's CPU backend materializes a broadcast operand of
    the library reductions it fuses: the 1000 x 25 x 10 copy of ``exp(log_scales)`` in
    the GMM-like gradient of bench/jax_grad.py)."""
    product = op.operands[0].owner
    if not _sum(op) or not isinstance(product, hlo.MultiplyOp) or not single_use(op.operands[0]):
        return
    dims = ints(op.dimensions)
    for side in (1, 0):
        found = _factor_outside(product.operands[side], dims)
        if found is None:
            continue
        b, mapping = found
        x = product.operands[1 - side]
        summed = _reduce(op, x, dims, op.results[0].type)
        if b is None:  # a splat: the same constant on the reduced shape
            factor_ops = [make_splat(float_splat(product.operands[side]), op.results[0].type)]
            factor = factor_ops[0].results[0]
        else:
            kept = [d for d in range(len(shape(x))) if d not in dims]
            factor_ops, factor = _factor_on(op.results[0].type, b, mapping, kept)
        scaled = new(hlo.MultiplyOp, [summed.results[0], factor], op.results[0].type)
        rewriter.replace(op, [summed, *factor_ops, scaled])
        return


def _earlier_product(x, b, mapping, before):
    """An op ``x * broadcast_in_dim(b, mapping)`` (either order) of ``before``'s block
    that comes before it, or None."""
    block = before.parent_block()
    for use in x.uses:
        p = use.operation
        if not isinstance(p, hlo.MultiplyOp) or p.parent_block() is not block or p.results[0].type != x.type:
            continue
        other = p.operands[1 - use.index]
        spread = other.owner
        if (isinstance(spread, hlo.BroadcastInDimOp) and spread.operands[0] == b
                and ints(spread.broadcast_dimensions) == mapping and p.is_before_in_block(before)):
            return p
    return None


@rewrite(hlo.MultiplyOp, "reduce_scaled_reuse", "reduce_sum(x * y, dims) * b -> reduce_sum(p * y, dims) where "
         "p = x * broadcast_in_dim(b) is computed anyway and p alone reads x otherwise", liberty=True, reorders_sum=True)
def reduce_scaled_reuse(op, rewriter):
    """The factor goes into the sum when the program already has ``x`` times it and
    nothing else reads ``x``: the sum reads ``p`` instead of ``x``, which then is read
    only by ``p`` (XLA computes it inside ``p``'s kernel instead of keeping it in
    memory). In reverse mode this is the adjoint of ``s`` in ``p = (a - m) * s``:
    ``sum(pbar * (a - m)) * s``, where ``(a - m) * s`` is the primal's (the GMM-like
    gradient of bench/jax_grad.py)."""
    for side in (0, 1):
        summed, b = op.operands[side], op.operands[1 - side]
        red = summed.owner
        if not isinstance(red, hlo.ReduceOp) or not _sum(red) or not single_use(summed):
            continue
        product = red.operands[0].owner
        if not isinstance(product, hlo.MultiplyOp) or not single_use(red.operands[0]):
            continue
        dims = ints(red.dimensions)
        kept = [d for d in range(len(shape(red.operands[0]))) if d not in dims]
        if b.type != summed.type:
            continue
        mapping = kept  # b is the result's shape: broadcast back along the kept dims
        for x_side in (0, 1):
            x, y = product.operands[x_side], product.operands[1 - x_side]
            p = _earlier_product(x, b, mapping, product)
            # only where x is then read by p alone: if something else reads x, XLA keeps
            # it in memory anyway, and reading p may keep p there too (ADBench GMM's
            # x - m feeds two dot_generals)
            if p is None or any(use.operation not in (p, product) for use in x.uses):
                continue
            reread = new(hlo.MultiplyOp, [p.results[0], y], y.type)
            rewriter.replace(op, [reread, _reduce(red, reread.results[0], dims, op.results[0].type)])
            rewriter.erase(red)  # a reduce has a region: xDSL's DCE keeps it
            rewriter.erase(product)
            return


def _dot_numbers(op):
    d = op.dot_dimension_numbers
    return [hlo.dims_field(d, f) for f in ("lhs_batching_dimensions", "rhs_batching_dimensions",
                                           "lhs_contracting_dimensions", "rhs_contracting_dimensions")]


def _absorb_transpose(op, rewriter, side: int):
    """dot_general reading ``transpose(a, p)`` as operand ``side`` reads ``a`` with the
    dimension numbers mapped through ``p``, when ``a``'s free dims keep their order (the
    result's dims are batch, lhs free, rhs free, each in operand order)."""
    operand = op.operands[side]
    inner = operand.owner
    if not isinstance(inner, hlo.TransposeOp):
        return
    perm = ints(inner.permutation)
    numbers = _dot_numbers(op)
    batch, contract = numbers[side], numbers[2 + side]
    free = [i for i in range(len(perm)) if i not in batch and i not in contract]
    mapped_free = [perm[i] for i in free]
    if mapped_free != sorted(mapped_free):
        return
    numbers[side] = [perm[i] for i in batch]
    numbers[2 + side] = [perm[i] for i in contract]
    operands = list(op.operands)
    operands[side] = inner.operands[0]
    properties = dict(op.properties)
    properties["dot_dimension_numbers"] = hlo.dot_dims(*numbers)
    rewriter.replace(op, hlo.DotGeneralOp.create(operands=operands, result_types=[op.results[0].type],
                                                 properties=properties))


@rewrite(hlo.DotGeneralOp, "dot_general_transposed_lhs", "dot_general(transpose(a), b) -> dot_general(a, b) "
         "with permuted dimension numbers")
def dot_general_transposed_lhs(op, rewriter):
    _absorb_transpose(op, rewriter, 0)


@rewrite(hlo.DotGeneralOp, "dot_general_transposed_rhs", "dot_general(a, transpose(b)) -> dot_general(a, b) "
         "with permuted dimension numbers")
def dot_general_transposed_rhs(op, rewriter):
    _absorb_transpose(op, rewriter, 1)


# ----- library calls ---------------------------------------------------------------------
def _lapack_key(op):
    """What decides a LAPACK custom_call's results: its kernel, operands, result types,
    options and batch dims (jaxlib's kernels are pure). None for other custom_calls."""
    target = op.call_target_name.data
    effect = op.properties.get("has_side_effect")
    if not target.startswith("lapack_") or (effect is not None and bool(effect.value.data)):
        return None
    options = op.attributes.get("mhlo.backend_config")
    frontend = op.attributes.get("mhlo.frontend_attributes")
    return (target, tuple(op.operands), tuple(r.type for r in op.results), options, frontend)


@rewrite(hlo.CustomCallOp, "lapack_call_repeated", "lapack_k(a) ... lapack_k(a) -> the first call's results")
def lapack_call_repeated(op, rewriter):
    """A LAPACK call repeating an earlier one of its block (the same kernel, operands and
    options) reuses that one's results. xDSL's CSE compares every attribute, and so does
    XLA's: JAX's spelling of a call and the one zymase's rules build (``ir/stablehlo.
    lapack_call``: no operand aliasing, no sharding rule) differ in attributes that do
    not change the results, which kept two SVDs of one matrix two gesdd runs."""
    key = _lapack_key(op)
    if key is None:
        return
    for earlier in op.parent_block().ops:
        if earlier is op:
            return
        if isinstance(earlier, hlo.CustomCallOp) and _lapack_key(earlier) == key:
            rewriter.replace(op, [], list(earlier.results))
            return


@rewrite(hlo.CustomCallOp, "lapack_call_unused", "lapack_k(a) with no result read -> nothing")
def lapack_call_unused(op, rewriter):
    """A LAPACK call none of whose results is read goes (jaxlib's kernels are pure; xDSL's
    DCE keeps every custom_call, which may have effects): the mode-N gesdd of
    ``jnp.linalg.svd(a, compute_uv=False)`` is dead once the SVD rule's mode-S call of
    the same matrix has merged with the program's other one (``lapack_call_repeated``).
    XLA drops it too; the printed program and XLA's compile time no longer carry it."""
    if _lapack_key(op) is not None and not any(r.uses for r in op.results):
        rewriter.erase(op)
