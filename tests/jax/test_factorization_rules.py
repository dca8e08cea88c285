"""The matrix-level rules of the LAPACK factorizations JAX emits on CPU (issue 28 item 2:
LU ``lapack_?getrf_ffi`` under ``jnp.linalg.solve``/``inv``/``det``/``slogdet`` and
``jax.scipy.linalg.lu``/``lu_factor``/``lu_solve``; SVD ``lapack_?gesdd_ffi`` and
``gesvd`` under ``jnp.linalg.svd``/``svdvals``/``norm(ord=2)``; QR ``geqrf`` + ``orgqr``
under ``jnp.linalg.qr``), forward and reverse, against ``jax.jvp``/``jax.vjp`` of the same
function and against central finite differences: square, tall and wide matrices, float64
and float32 with a batch dimension. Also ``jnp.linalg.solve`` with respect to the matrix
(its derivative used to be silently zero: JAX factors ``stop_gradient(a)`` inside a
``custom_linear_solve``) and the refusals of what the rules do not cover. One XLA
program per mode (compiles dominate the time).
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.errors import ZymaseError  # noqa: E402

TOL = {np.float32: dict(rtol=2e-3, atol=2e-4), np.float64: dict(rtol=1e-9, atol=1e-11)}


def _cases(square, tall, b, every=True):
    """The JAX functions whose factorizations have rules, on one square matrix (with a
    negative determinant and row swaps), one tall (5x3) and its transpose; a few of them
    when not ``every``."""
    wide = jnp.swapaxes(tall, -1, -2)
    few = dict(solve=jnp.linalg.solve(square, b), det=jnp.linalg.det(square),
               svd_tall=jnp.linalg.svd(tall, full_matrices=False), qr=jnp.linalg.qr(tall))
    if not every:
        return few
    return few | dict(  # inv, slogdet, lu_factor, lu_solve: the same kernels as solve, det, lu
        lu_tall=_lu(tall), lu_wide=_lu(wide), svd_wide=jnp.linalg.svd(wide, full_matrices=False),
        norm2=jnp.linalg.norm(wide, ord=2), qr_r=jnp.linalg.qr(square, mode="r"))


def _lu(a):
    """``jax.scipy.linalg.lu``'s factors (it takes no batch dimension): L, U and the
    permutation matrix from the packed factor."""
    lu, _, perm = jax.lax.linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    lower = jnp.tril(lu[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    return jax.nn.one_hot(perm, m, dtype=a.dtype), lower, jnp.triu(lu[..., :k, :])


def _program(inputs):
    return tuple(_cases(*x, every=k == 0) for k, x in enumerate(inputs))


def _inputs(seed):
    """float64 unbatched, float32 with a batch of two."""
    rng = np.random.default_rng(seed)
    out = []
    for dtype, batch in ((np.float64, ()), (np.float32, (2,))):
        square = rng.normal(size=(*batch, 4, 4)) + 2 * np.eye(4)[::-1]  # a row swap, det < 0
        out.append(tuple(jnp.asarray(x.astype(dtype)) for x in
                         (square, rng.normal(size=(*batch, 5, 3)), rng.normal(size=(*batch, 4, 2)))))
    return tuple(out)


def _assert_close(got, want, inputs):
    for x, g, w in zip(inputs, got, want):
        for k, (gi, wi) in enumerate(zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(w))):
            np.testing.assert_allclose(np.asarray(gi), np.asarray(wi), **TOL[x[0].dtype.type],
                                       err_msg=f"{x[0].dtype}, output {k}")


def test_factorizations_reverse_match_jax_vjp():
    inputs = _inputs(0)
    rng = np.random.default_rng(7)
    weights = jax.tree_util.tree_map(lambda s: jnp.asarray(rng.normal(size=s.shape).astype(s.dtype)),
                                     jax.eval_shape(_program, inputs))
    (got,) = zj.vjp(_program, inputs)[1](weights)
    (want,) = jax.jit(lambda x, w: jax.vjp(_program, x)[1](w))(inputs, weights)
    _assert_close(got, want, inputs)


def test_factorizations_forward_match_jax_jvp_and_finite_differences():
    inputs, tangents = _inputs(1), _inputs(2)
    value, tangent = zj.jvp(_program, (inputs,), (tangents,))
    want_value, want_tangent = jax.jit(lambda x, t: jax.jvp(_program, (x,), (t,)))(inputs, tangents)
    _assert_close(value, want_value, inputs)
    _assert_close(tangent, want_tangent, inputs)
    # float64 part against central differences (the factors' signs are stable this close)
    h = 1e-6
    step = lambda k: jax.jit(_cases)(*(x + k * h * t for x, t in zip(inputs[0], tangents[0])))  # noqa: E731
    differences = jax.tree_util.tree_map(lambda p, m: (p - m) / (2 * h), step(1), step(-1))
    for got, want in zip(jax.tree_util.tree_leaves(tangent[0]), jax.tree_util.tree_leaves(differences)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_solve_gradient_with_respect_to_the_matrix():
    """``jnp.linalg.solve`` factors ``stop_gradient(a)``; the matrix's derivative lives in
    the ``custom_linear_solve`` rule JAX's lowering drops (zymase gave zero)."""
    rng = np.random.default_rng(4)
    a, b = jnp.asarray(rng.normal(size=(3, 3)) + 3 * np.eye(3)), jnp.asarray(rng.normal(size=3))
    f = lambda a, b: jnp.sum(jnp.linalg.solve(a, b) ** 2)  # noqa: E731
    value, grads = zj.value_and_grad(f, argnums=(0, 1))(a, b)
    want_value, want = jax.value_and_grad(f, argnums=(0, 1))(a, b)
    # the implicit form solves the same system: the value agrees to rounding (XLA may fuse
    # the two programs' sums of squares in different orders, a few ulps at most)
    np.testing.assert_allclose(float(value), float(want_value), rtol=1e-14)
    for g, w in zip(grads, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-13)


# session 24, issue 28 performance: the SVD zymase's rule computes for svdvals (mode S) is
# the SVD the program computes already; spelled without JAX's operand aliasing, it stayed
# a second gesdd run in XLA (which compares every attribute) until the rewrite
# lapack_call_repeated merged the two
def test_singular_values_and_vectors_of_one_matrix_are_one_lapack_call():
    a = jnp.asarray(np.random.default_rng(5).normal(size=(6, 3)))

    def f(a):
        u, s, vt = jnp.linalg.svd(a, full_matrices=False)
        return jnp.sum(u[:, :2] * s[:2] @ vt[:2]) + jnp.sum(jnp.linalg.svd(a, compute_uv=False) ** 3)

    gradient = jax.jit(zj.grad(f))
    assert gradient.lower(a).compile().as_text().count('custom_call_target="lapack_dgesdd_ffi"') == 1
    np.testing.assert_allclose(gradient(a), jax.jit(jax.grad(f))(a), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("f, shape, message", [
    (lambda a: jnp.linalg.svd(a)[0].sum(), (4, 3), "full SVD of a non-square"),
    (lambda a: jnp.linalg.qr(a)[0].sum(), (3, 4), "QR decomposition of a wide"),
    (lambda a: jnp.linalg.qr(a, mode="complete")[0].sum(), (4, 3), "complete Q"),
    (lambda a: jnp.linalg.qr(a, mode="raw")[1].sum(), (4, 3), "read directly (mode='raw')"),
    (lambda a: jax.scipy.sparse.linalg.cg(a @ a.T + jnp.eye(3), jnp.ones(3))[0].sum(), (3, 3),
     "custom_linear_solve applies"),
], ids=["svd_full_non_square", "qr_wide", "qr_complete", "qr_raw", "cg"])
def test_uncovered_factorizations_are_refused_by_name(f, shape, message):
    with pytest.raises(ZymaseError, match="zymase: error: .*" + message.replace("(", r"\(").replace(")", r"\)")):
        zj.grad(f)(jnp.ones(shape) + jnp.eye(*shape))
