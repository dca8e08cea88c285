"""zymase.jacfwd and zymase.jacrev by vector modes (issue 25 item 2, the Python
Jacobians): one width-8 forward call per 8 input elements, one width-8 reverse call
(one sweep, one tape) per 8 output elements (``api_outputs.CHUNK``; fewer lanes when
there are fewer elements), the last chunk padded with zero (co)tangents. Checked
against N separate scalar calls (``jvp`` with one basis tangent each, ``vjp`` with one
basis cotangent each) and a closed form, at sizes 1, 3 (widths 1 and 3), 8 (one full
chunk), 10 and 17 (8 does not divide them), for a tuple result in float32, and that
the kernels really are vector kernels (``zymase.stats()``)."""

import math

import numpy as np
import pytest
from numba import njit

import zymase


@njit
def stencil(x, a):
    """A nonlinear three-point stencil R^n x R -> R^n."""
    n = x.shape[0]
    out = np.empty(n, dtype=x.dtype)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i + 1 < n else 0.0
        out[i] = left - 2 * x[i] + right + a * math.sin(x[i]) * right
    return out


def stencil_jac(x, a):
    """Closed form: d stencil / dx (n, n) and d stencil / da (n,)."""
    n = x.size
    jx, ja = np.zeros((n, n)), np.zeros(n)
    for i in range(n):
        right = x[i + 1] if i + 1 < n else 0.0
        jx[i, i] = -2 + a * math.cos(x[i]) * right
        if i > 0:
            jx[i, i - 1] = 1
        if i + 1 < n:
            jx[i, i + 1] = 1 + a * math.sin(x[i])
        ja[i] = math.sin(x[i]) * right
    return jx, ja


@njit
def moments(x, y):
    """(y * sum x^3, exp(y) * x * x): a tuple of a float and an array."""
    s = x[0] * 0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * x[i]
    return y * s, math.exp(y) * x * x


@pytest.mark.parametrize("n", [1, 3, 8, 10, 17])
def test_jacfwd_in_chunks_equals_separate_scalar_calls(n):
    x, a = np.linspace(-1.2, 0.9, n), 0.7
    jx, ja = zymase.jacfwd(stencil, argnums=(0, 1))(x, a)
    # N separate scalar forward calls, one basis tangent each
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1
        _, column = zymase.jvp(stencil, (x, a), (e, 0.0))
        np.testing.assert_allclose(jx[:, j], column, rtol=0, atol=1e-15)
    want_x, want_a = stencil_jac(x, a)
    np.testing.assert_allclose(jx, want_x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ja, want_a, rtol=1e-13, atol=1e-13)
    widths = {r.width for r in zymase.stats() if r.function.endswith("stencil") and r.mode == "fwd"}
    assert min(n, 8) in widths, widths


@pytest.mark.parametrize("n", [1, 3, 10, 17])
def test_jacrev_in_chunks_equals_separate_scalar_calls(n):
    x, a = np.linspace(-1.2, 0.9, n), 0.7
    jx, ja = zymase.jacrev(stencil, argnums=(0, 1))(x, a)
    _, pullback = zymase.vjp(stencil, x, a)
    for i in range(n):  # N separate scalar reverse calls, one basis cotangent each
        e = np.zeros(n)
        e[i] = 1
        row_x, row_a = pullback(e)
        np.testing.assert_allclose(jx[i], row_x, rtol=0, atol=1e-15)
        np.testing.assert_allclose(ja[i], row_a, rtol=0, atol=1e-15)
    want_x, want_a = stencil_jac(x, a)
    np.testing.assert_allclose(jx, want_x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(ja, want_a, rtol=1e-13, atol=1e-13)
    widths = {r.width for r in zymase.stats() if r.function.endswith("stencil") and r.mode == "rev"}
    assert min(n, 8) in widths, widths


def test_jacfwd_vector_mode_tuple_result_float32():
    x, y = np.linspace(-1, 1, 10).astype(np.float32), np.float32(0.3)
    (ds_dx, ds_dy), (dv_dx, dv_dy) = zymase.jacfwd(moments, argnums=(0, 1))(x, y)
    xd = x.astype(np.float64)
    np.testing.assert_allclose(ds_dx, 3 * 0.3 * xd**2, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(ds_dy, np.sum(xd**3), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(dv_dx, np.diag(2 * math.exp(0.3) * xd), rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(dv_dy, math.exp(0.3) * xd * xd, rtol=2e-5, atol=2e-5)
    assert ds_dx.shape == (10,) and dv_dx.shape == (10, 10)
    assert any(r.width == 8 for r in zymase.stats() if r.function.endswith("moments"))
    # reverse: the float and the array result, rows in chunks of 8 (11 rows: 8 + 3 padded)
    (rs_dx, rs_dy), (rv_dx, rv_dy) = zymase.jacrev(moments, argnums=(0, 1))(x, y)
    for got, want in ((rs_dx, ds_dx), (rs_dy, ds_dy), (rv_dx, dv_dx), (rv_dy, dv_dy)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


@njit
def two_products(x, W1, W2, W3):
    """Matrix-vector products as NumPy users write them: W1 @ x (gemv 't', whose lanes
    are the unit seeds: the nonzeros-only product), W2 @ h (dense lanes: one gemm) and
    x @ W3 (gemv 'n')."""
    return W2 @ np.tanh(W1 @ x) + np.tanh(x @ W3)


def test_jacfwd_vector_mode_through_matrix_vector_products():
    # vector forward mode keeps Numba's gemv a call: every lane in one runtime call
    # (rules/numba_linalg.py forward_lanes), checked against the closed forms
    # d/dx = W2 diag(1 - h^2) W1 + diag(1 - g^2) W3^T and d/dW1[j, k] = W2[:, j] (1 - h_j^2)
    # x_k, at 17 + 85 inputs in chunks of 8 (x's lanes: unit seeds, W1's: a matrix
    # tangent per lane)
    rng = np.random.default_rng(5)
    x, W1, W2, W3 = (rng.standard_normal(17), rng.standard_normal((5, 17)) / 4, rng.standard_normal((4, 5)),
                     rng.standard_normal((17, 4)) / 4)
    h, g = np.tanh(W1 @ x), np.tanh(x @ W3)
    jx, jw = zymase.jacfwd(two_products, argnums=(0, 1))(x, W1, W2, W3)
    want_x = W2 @ ((1 - h * h)[:, None] * W1) + (1 - g * g)[:, None] * W3.T
    want_w = (W2 * (1 - h * h))[:, :, None] * x[None, None, :]
    np.testing.assert_allclose(jx, want_x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(jw, want_w, rtol=1e-13, atol=1e-13)


@njit
def solved(A, b):
    return np.linalg.solve(A, b)


def test_jacobians_through_a_helper_vector_mode_refuses_take_one_lane_per_call(monkeypatch):
    # vector mode does not cover Numba's linear-algebra helpers (numba_xgesv): jacfwd
    # and jacrev, which chose the width, fall back to width-1 calls (they were refused
    # by name, with a hint to use width 1 that a Jacobian's user cannot follow); the
    # refusal is remembered, so a second Jacobian compiles nothing
    rng = np.random.default_rng(7)
    A = 3 * np.eye(10) + 0.1 * rng.standard_normal((10, 10))
    b = rng.standard_normal(10)
    inv = np.linalg.inv(A)
    for jac in (zymase.jacfwd, zymase.jacrev):
        np.testing.assert_allclose(jac(solved, argnums=1)(A, b), inv, rtol=1e-12, atol=1e-14)
        # d x / d A[k, l] = -inv[:, k] x[l]
        x = inv @ b
        np.testing.assert_allclose(jac(solved, argnums=0)(A, b), -np.einsum("ik,l->ikl", inv, x),
                                   rtol=1e-12, atol=1e-14)
    from zymase import api_outputs

    requested = []
    direct = api_outputs._direct

    def counting(*args, **kwargs):
        requested.append(kwargs.get("width", 1))
        return direct(*args, **kwargs)

    monkeypatch.setattr(api_outputs, "_direct", counting)
    compiled = len(zymase.stats())
    zymase.jacfwd(solved, argnums=1)(A, 2 * b)
    zymase.jacrev(solved, argnums=1)(A, 2 * b)
    assert len(zymase.stats()) == compiled and set(requested) == {1}, requested
