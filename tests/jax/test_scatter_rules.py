"""Scatter rules against JAX (issue 28 item 2 of session 24): ``x.at[i].mul(u)`` with a
differentiated factor ``u``, forward and reverse, and the adjoint of a scatter's updates
at out-of-bounds indices, which XLA drops (JAX's default mode for ``.at[]`` updates).

JAX differentiates ``.at[i].mul(u)`` in ``u`` only when told the indices are unique;
with repeated indices the reference is the same product written as a one-hot
``jnp.prod``, whose JAX derivative is exact at zero factors too."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import zymase.jax as zj  # noqa: E402

# index 1 three times, 3 twice, 7 and -9 out of bounds for n = 6, -2 is element 4
INDICES = jnp.array([1, 3, 1, 7, 3, -2, 1, -9])
# a zero factor alone at index 3 with a nonzero one; two zeros at index 1
FACTORS = jnp.array([0.5, 0.0, 0.0, 2.5, 1.7, -1.3, 0.0, 0.9])
N = 6


def _one_hot_product(x, u):
    """x times, per element, the product of the factors scattered to it (the reference)."""
    idx = jnp.where(INDICES < 0, INDICES + N, INDICES)
    hits = idx[:, None] == jnp.arange(N)[None, :]
    return x * jnp.prod(jnp.where(hits, u[:, None], 1.0), axis=0)


def _others(x, u, m, row):
    """The cases JAX differentiates itself."""
    unique = x.at[jnp.array([4, 0, 2])].mul(u[3:6] * u[3:6], unique_indices=True)
    window = m.at[1].mul(row)  # a row of factors into row 1 of a matrix
    added = x.at[INDICES].add(u * u)  # the updates' adjoint is zero where XLA drops them
    return unique ** 2, jnp.cos(window), jnp.sin(added)


def _programs(x, u, m, row):
    return jnp.sin(x.at[INDICES].mul(u)), *_others(x, u, m, row)


def _references(x, u, m, row):
    return jnp.sin(_one_hot_product(x, u)), *_others(x, u, m, row)


def _inputs(seed):
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.uniform(-1.5, 1.5, N))
    m = jnp.asarray(rng.uniform(-1.5, 1.5, (3, 4)))
    row = jnp.asarray(rng.uniform(-1.5, 1.5, 4))
    return x, FACTORS, m, row


# session 24, issue 28 item 2: the factors' adjoint, repeated and out-of-bounds indices, zero factors
def test_scatter_multiply_factors_reverse_matches_jax():
    args = _inputs(0)
    np.testing.assert_allclose(_programs(*args)[0], _references(*args)[0], rtol=1e-14)
    weights = tuple(jnp.asarray(np.random.default_rng(k).uniform(0.5, 1.5, o.shape))
                    for k, o in enumerate(_programs(*args)))
    _, pullback = zj.vjp(_programs, *args)
    got = pullback(weights)
    want = jax.jit(lambda a, w: jax.vjp(_references, *a)[1](w))(args, weights)
    for name, g, w in zip(("x", "u", "m", "row"), got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14, err_msg=name)


# session 24, issue 28 item 2: the factors' tangent
def test_scatter_multiply_factors_forward_matches_jax():
    args = _inputs(0)
    tangents = tuple(jnp.asarray(np.random.default_rng(9).uniform(-1, 1, a.shape)) for a in args)
    value, tangent = zj.jvp(_programs, args, tangents)
    want_value, want_tangent = jax.jit(lambda a, t: jax.jvp(_references, a, t))(args, tangents)
    for g, w in zip((*value, *tangent), (*want_value, *want_tangent)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)



def _clipped_reads(x, m, i):
    """Gathers whose start indices XLA clamps: past the end of a vector, rows of a matrix
    by a traced index (a 2-component index vector clamped per dim), a window that would
    overhang; mode='clip', in which JAX's own adjoint clamps too."""
    return (jnp.take(x, i + 3, mode="clip") * 3.0
            + jnp.sum(m.at[i + 5, jnp.array([0, 2])].get(mode="clip") * jnp.arange(1.0, 3.0))
            + jnp.sum(jax.lax.dynamic_slice(x, (i + 4,), (2,)) * jnp.array([5.0, 7.0])))


def test_gather_adjoint_goes_where_the_clamped_gather_read():
    # session 32: the adjoint's scatter-add dropped what the gather had read at a clamped
    # index (d/dx[-1] of take(x, 6, mode='clip') was 0, jax.grad's 1)
    x = jnp.asarray(np.linspace(-1.0, 2.0, 6))
    m = jnp.asarray(np.arange(12.0).reshape(3, 4) / 7)
    got = zj.grad(_clipped_reads, argnums=(0, 1))(x, m, 3)
    want = jax.grad(_clipped_reads, argnums=(0, 1))(x, m, 3)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-14)
    assert float(got[0][-1]) == 3.0 + 7.0 and float(got[1][2, 2]) == 2.0
    # x[i] past the end (JAX's default mode promises in-bounds indices, and jax.grad's
    # adjoint is then dropped: "gradients will not be correct"): the element read, x[-1]
    g = zj.grad(lambda v, k: v[k + 9] ** 2)(x, 3)
    np.testing.assert_array_equal(g, np.eye(6)[-1] * 2 * float(x[-1]))
