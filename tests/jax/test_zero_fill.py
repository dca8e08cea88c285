"""A large zero pad (the adjoint of a small slice of a large vector) reaches XLA as a
dynamic_update_slice into zeros kept apart by an optimization_barrier, which XLA's CPU
backend fills with vectorized stores instead of testing every element (issue 28,
performance: the slice-of-product case)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.frontends import jax as front  # noqa: E402
from zymase.transforms import hlo_zero_fill  # noqa: E402


def _slice_of_product(a, b):
    return jnp.sum(jnp.sin((a * b)[100:300]))


def _small_slice(a):
    return jnp.sum(jnp.sin(a[3:9]))


# issue 28 performance item 3: the gradient's zeros are a fill apart from the update
def test_gradient_of_small_slice_of_large_vector_fills_zeros_apart_and_matches_jax():
    n = hlo_zero_fill.MIN_ELEMENTS
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
