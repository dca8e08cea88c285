"""How derivatives reach XLA's CPU backend (transforms/hlo_xla_cpu.py, issue 28
performance): a large zero pad (the adjoint of a small slice of a large vector) as a
dynamic_update_slice into zeros kept apart by an optimization_barrier, which XLA fills
with vectorized stores instead of testing every element; small contractions as multiply
and reduce, which XLA fuses instead of calling a library per dot; a division's adjoint
reading its operands, not the quotient, which XLA would keep in memory apart from the
division's consumer."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.frontends import jax as front  # noqa: E402
from zymase.ir import parse_mlir  # noqa: E402
from zymase.ir import stablehlo as hlo  # noqa: E402
from zymase.transforms import hlo_xla_cpu  # noqa: E402


def _slice_of_product(a, b):
    return jnp.sum(jnp.sin((a * b)[100:300]))


def _small_slice(a):
    return jnp.sum(jnp.sin(a[3:9]))


# issue 28 performance item 3: the gradient's zeros are a fill apart from the update
def test_gradient_of_small_slice_of_large_vector_fills_zeros_apart_and_matches_jax():
    n = hlo_xla_cpu.MIN_ELEMENTS
    a = jnp.asarray(np.random.default_rng(0).normal(size=n))
    b = jnp.asarray(np.random.default_rng(1).normal(size=n))
    leaves, tree = jax.tree_util.tree_flatten((a, b))
    text = front.derivative_module(_slice_of_product, leaves, tree, "reverse", [True, True])
    assert '"stablehlo.pad"' not in text
    assert text.count('"stablehlo.optimization_barrier"') == 2  # one per gradient
    got = zj.grad(_slice_of_product, argnums=(0, 1))(a, b)
    want = jax.jit(jax.grad(_slice_of_product, argnums=(0, 1)))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    # a small result keeps its pad, which XLA fuses into the code that reads it
    small = jnp.asarray(np.linspace(0.0, 1.0, 16))
    leaves, tree = jax.tree_util.tree_flatten((small,))
    assert '"stablehlo.pad"' in front.derivative_module(_small_slice, leaves, tree, "reverse", [True])


def _bone_chain(angles, offsets):
    """A chain of 4x4 transforms (the hand model's bones) and a batched 3x3 product."""
    c, s = jnp.cos(angles), jnp.sin(angles)
    zero, one = jnp.zeros_like(c), jnp.ones_like(c)
    rot = jnp.stack([c, -s, zero, offsets, s, c, zero, zero, zero, zero, one, zero, zero, zero, zero, one],
                    axis=1).reshape(-1, 4, 4)
    total = rot[0]
    for m in rot[1:]:
        total = total @ m
    batched = jnp.einsum("bij,bjk->bik", rot[:, :3, :3], rot[:, 1:, 1:])
    return jnp.sum(total ** 2) + jnp.sum(jnp.tanh(batched))


# issue 28 performance item 2 (the hand model): small contractions reach XLA as multiply
# and reduce, with jax.grad's values
def test_small_contractions_become_multiply_and_reduce_and_match_jax():
    angles = jnp.asarray(np.linspace(0.1, 1.2, 5))
    offsets = jnp.asarray(np.linspace(-0.5, 0.5, 5))
    leaves, tree = jax.tree_util.tree_flatten((angles, offsets))
    assert '"stablehlo.dot_general"' not in front.derivative_module(_bone_chain, leaves, tree, "reverse",
                                                                    [True, True])
    got = zj.grad(_bone_chain, argnums=(0, 1))(angles, offsets)
    want = jax.jit(jax.grad(_bone_chain, argnums=(0, 1)))(angles, offsets)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)



def _kernel(d, s):
    """A Gaussian kernel's exp(-d / s), as in a GP likelihood."""
    return jnp.sum(jnp.exp(-d / s) * jnp.cos(d))


# issue 28: XLA does not compute a division twice for two readers, so an adjoint reading
# the quotient split exp(-d / s) from its division (an extra pass over a GP's 200 x 200
# kernel: bench/jax_grad.py's solve 1.04x -> 0.99x jax.grad)
def test_division_adjoint_reads_the_operands_not_the_quotient():
    d = jnp.asarray(np.random.default_rng(2).uniform(0.1, 2.0, size=(6, 6)))
    s = jnp.asarray(0.7)
    text = front.derivative_module(_kernel, [d, s], jax.tree_util.tree_structure((d, s)), "reverse", [True, True])
    divisions = [op for op in parse_mlir(text).walk() if isinstance(op, hlo.DivideOp)
                 and op.operands[0].owner is not None and isinstance(op.operands[0].owner, hlo.NegateOp)]
    assert len(divisions) == 1 and len(list(divisions[0].results[0].uses)) == 1  # exp alone reads -d / s
    got = zj.grad(_kernel, argnums=(0, 1))(d, s)
    want = jax.jit(jax.grad(_kernel, argnums=(0, 1)))(d, s)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def _gmm_like(alphas, means, log_scales, x):
    """bench/jax_grad.py's GMM-like log-likelihood, small."""
    centered = (x[:, None, :] - means[None]) * jnp.exp(log_scales)[None]
    inner = alphas[None] + jnp.sum(log_scales, axis=1)[None] - 0.5 * jnp.sum(centered ** 2, axis=2)
    return jnp.sum(jax.nn.logsumexp(inner, axis=1)) - x.shape[0] * jax.nn.logsumexp(alphas)


def _sums_of_scaled_products(module) -> list:
    """The reduce-sums over a product (or its negation) with a factor broadcast along the
    summed dims."""
    found = []
    for op in module.walk():
        if not isinstance(op, hlo.ReduceOp):
            continue
        inner = op.operands[0].owner
        if isinstance(inner, hlo.NegateOp):
            inner = inner.operands[0].owner
        summed = set(op.dimensions.get_values())
        if isinstance(inner, hlo.MultiplyOp) and any(
                isinstance(v.owner, hlo.BroadcastInDimOp) and not summed & set(v.owner.broadcast_dimensions.get_values())
                for v in inner.operands):
            found.append(op)
    return found


# issue 28 (bench/jax_grad.py's gmm, 1.04-1.15x jax.grad in session 26): the means'
# adjoint sums (x - m) * broadcast(exp(s)) products, for which XLA's CPU backend
# materializes the broadcast factor at the full size (1000 x 25 x 10); the factor comes
# out of the sum, and the log-scales' sum reads the primal's (x - m) * exp(s) instead of
# keeping x - m in memory (reduce_scaled, reduce_scaled_reuse)
def test_gmm_gradient_sums_without_broadcast_factors_and_matches_jax():
    rng = np.random.default_rng(3)
    args = (jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=(3, 2))),
            jnp.asarray(rng.normal(0, 0.1, (3, 2))), jnp.asarray(rng.normal(size=(7, 2))))
    leaves, tree = jax.tree_util.tree_flatten(args)
    module = parse_mlir(front.derivative_module(_gmm_like, leaves, tree, "reverse", [True, True, True, False]))
    assert not _sums_of_scaled_products(module)
    three_d = [op for op in module.walk() if isinstance(op, hlo.SubtractOp) and len(op.results[0].type.get_shape()) == 3]
    assert len(three_d) == 1 and len(list(three_d[0].results[0].uses)) == 1  # x - m: read by the primal's product only
    got = zj.grad(_gmm_like, argnums=(0, 1, 2))(*args)
    want = jax.jit(jax.grad(_gmm_like, argnums=(0, 1, 2)))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
