"""The matrix-level rules of the LAPACK custom_calls JAX emits on CPU (issue 28, the rest
of items 1 and 2: ``jnp.linalg.cholesky`` -> ``lapack_?potrf_ffi``,
``jax.scipy.linalg.solve_triangular`` / ``lax.linalg.triangular_solve`` ->
``lapack_?trsm_ffi``, ``jnp.linalg.eigh`` -> ``lapack_?syevd_ffi``), forward and reverse,
against ``jax.jvp`` / ``jax.vjp`` of the same function: every side, triangle, transpose
and diagonal variant JAX emits, a batch dimension, float32 and float64; and, against
finite differences, that each kernel's derivative reads only the triangle it reads.
Each test is one XLA program per mode (compiles dominate).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.scipy.linalg import solve_triangular  # noqa: E402

import zymase.jax as zj  # noqa: E402

TOL = {np.float32: dict(rtol=2e-3, atol=2e-4), np.float64: dict(rtol=1e-9, atol=1e-11)}


def _spd(rng, n, dtype, batch=()):
    m = rng.normal(size=(*batch, n, n))
    return jnp.asarray((m @ np.swapaxes(m, -1, -2) + n * np.eye(n)).astype(dtype))


def _triangular(rng, n, dtype, batch=()):
    """Well-conditioned, full (both triangles hold numbers: the kernels must not read the
    other one, and the rules must not differentiate it)."""
    return jnp.asarray((rng.normal(size=(*batch, n, n)) * 0.3 + 2.0 * np.eye(n)).astype(dtype))


def _solves(a, b, every: bool = True):
    """The trsm variants JAX emits: left/right side, lower/upper, N/T, unit diagonal (a
    few of them when not ``every``)."""
    bt = jnp.swapaxes(b, -1, -2)
    few = (solve_triangular(a, b, lower=False, trans=1),
           lax.linalg.triangular_solve(a, bt, left_side=False, lower=True))
    if not every:
        return few
    return few + (solve_triangular(a, b, lower=True),
                  solve_triangular(a, b[..., :1], lower=False, trans=2, unit_diagonal=True),
                  lax.linalg.triangular_solve(a, bt, left_side=False, lower=False, transpose_a=True),
                  lax.linalg.triangular_solve(a, bt, left_side=False, lower=True, transpose_a=True,
                                              unit_diagonal=True))


def _factorizations(a, b):
    """The Cholesky factor, the solve JAX's cho_solve makes of it, a log-determinant, and
    the eigendecomposition from either triangle (eigenvalues and eigenvectors)."""
    chol = jnp.linalg.cholesky(a)
    logdet = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)))
    w, v = jnp.linalg.eigh(a)
    upper = jax.scipy.linalg.eigh(a + b @ jnp.swapaxes(b, -1, -2), lower=False)
    return chol, jax.scipy.linalg.cho_solve((chol, True), b), logdet, w, v, upper


KINDS = ("chol", "trsm", "chol", "trsm")


def _program(pairs):
    """float64 cases with every variant, then float32 batched ones (two matrices each)."""
    return tuple(_factorizations(a, b) if kind == "chol" else _solves(a, b, every=k < 2)
                 for k, (kind, (a, b)) in enumerate(zip(KINDS, pairs)))


def _pairs(seed):
    rng = np.random.default_rng(seed)
    pairs = []
    for kind, dtype, batch in zip(KINDS, (np.float64, np.float64, np.float32, np.float32), ((), (), (2,), (2,))):
        b = jnp.asarray(rng.normal(size=(*batch, 4, 3)).astype(dtype))
        a = _spd(rng, 4, dtype, batch) if kind == "chol" else _triangular(rng, 4, dtype, batch)
        pairs.append((a, b))
    return tuple(pairs)


def _assert_close(got, want, pairs):
    for kind, (a, _), g, w in zip(KINDS, pairs, got, want):
        for k, (gi, wi) in enumerate(zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(w))):
            assert gi.dtype == wi.dtype
            np.testing.assert_allclose(np.asarray(gi), np.asarray(wi), **TOL[a.dtype.type],
                                       err_msg=f"{kind} {a.dtype} {a.shape}, output {k}")


def test_cholesky_and_triangular_solve_reverse_match_jax_vjp():
    pairs = _pairs(0)
    rng = np.random.default_rng(5)
    weights = jax.tree_util.tree_map(lambda s: jnp.asarray(rng.normal(size=s.shape).astype(s.dtype)),
                                     jax.eval_shape(_program, pairs))
    _, pullback = zj.vjp(_program, pairs)
    (got,) = pullback(weights)
    (want,) = jax.jit(lambda p, w: jax.vjp(_program, p)[1](w))(pairs, weights)
    _assert_close(got, want, pairs)


def test_cholesky_and_triangular_solve_forward_match_jax_jvp():
    pairs = _pairs(1)
    tangents = _pairs(2)  # not symmetric, not triangular: the rules read what the kernels read
    tangents = tuple((a + jnp.asarray(np.tril(np.ones(a.shape[-2:]), -1), a.dtype), b) for a, b in tangents)
    value, tangent = zj.jvp(_program, (pairs,), (tangents,))
    want_value, want_tangent = jax.jit(lambda p, t: jax.jvp(_program, (p,), (t,)))(pairs, tangents)
    _assert_close(value, want_value, pairs)
    _assert_close(tangent, want_tangent, pairs)


def test_eigh_and_cholesky_read_only_the_triangle_they_are_given():
    """Without JAX's symmetrization (``symmetrize_input=False``) LAPACK reads one triangle
    alone (eigh here the upper, cholesky the lower), so the derivative is that of the
    symmetric matrix with that triangle. JAX's own rules assume a symmetric input there,
    so the reference is central finite differences of the primal: the tangent directly,
    the adjoint through <Abar, dA> = <Vbar, dV> + <wbar, dw> + <Lbar, dL>."""
    rng = np.random.default_rng(3)
    a = _spd(rng, 4, np.float64) + jnp.asarray(np.tril(rng.normal(size=(4, 4)), -1) * 0.3)  # not symmetric
    da = jnp.asarray(rng.normal(size=(4, 4)))
    f = lambda a: (*lax.linalg.eigh(a, lower=False, symmetrize_input=False),  # noqa: E731
                   lax.linalg.cholesky(a, symmetrize_input=False))
    h = 1e-6
    plus, minus = jax.jit(f)(a + h * da), jax.jit(f)(a - h * da)
    differences = [(p - m) / (2 * h) for p, m in zip(plus, minus)]
    _, tangent = zj.jvp(f, (a,), (da,))
    for got, want in zip(tangent, differences):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    cotangents = (jnp.asarray(rng.normal(size=(4, 4))), jnp.asarray(rng.normal(size=4)),
                  jnp.asarray(rng.normal(size=(4, 4))))
    (adjoint,) = zj.vjp(f, a)[1](cotangents)
    np.testing.assert_allclose(np.sum(adjoint * da), sum(np.sum(c * d) for c, d in zip(cotangents, differences)),
                               rtol=1e-7)
