"""StableHLO rewrites of reductions, contractions and library calls: a reduce of a
transpose, of a reshape, of a broadcast, of a zero pad; a dot_general whose operand is a
transpose takes the transpose into its dimension numbers; a LAPACK call repeating an
earlier one reuses its results. Registered in ``hlo_rewrite_base.REWRITES``.

A reduce-sum's order of additions is XLA's choice, so a rewritten sum equals the original
up to rounding (the numeric tests compare these with a tolerance); the maximum and the
minimum, and dot_general, are unchanged.
"""

from __future__ import annotations

from zymase.ir import stablehlo as hlo
from zymase.transforms.hlo_rewrite_base import (
    ints,
    is_zero,
    like,
    make_splat,
    new,
    rewrite,
    shape,
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
