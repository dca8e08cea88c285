"""How derivatives reach XLA's CPU backend (transforms/hlo_xla_cpu.py, issue 28
performance): a large zero pad (the adjoint of a small slice of a large vector) as a
dynamic_update_slice into zeros kept apart by an optimization_barrier, which XLA fills
with vectorized stores instead of testing every element; small contractions as multiply
and reduce, which XLA fuses instead of calling a library per dot."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.frontends import jax as front  # noqa: E402
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

