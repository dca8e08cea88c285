"""``zymase.laplacian`` (issue 25 item 4, the Laplacian; tests of item 3 of the session
brief): the trace of the Hessian in Taylor mode (forward over forward) against closed
forms and central differences, float64 and float32 (against the dense Hessian's trace
in test_sparse_derivatives.py); through loops, arrays allocated in njit code,
element-wise math and libm, a matrix times a vector (Numba's gemv wrapper, defined as loops
for the engine); refusals in the user's terms."""

import math

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def mlp(x, W1, b1, W2, b2, w3):
    """Two tanh hidden layers, as loops; the first layer's output is a new array."""
    h = np.empty(W1.shape[0], x.dtype)
    for j in range(W1.shape[0]):
        z = b1[j]
        for k in range(x.shape[0]):
            z += W1[j, k] * x[k]
        h[j] = np.tanh(z)
    s = 0.0
    for j in range(W2.shape[0]):
        z = b2[j]
        for k in range(h.shape[0]):
            z += W2[j, k] * h[k]
        s += w3[j] * np.tanh(z)
    return s


def _weights(rng, d, w, dtype):
    return tuple(a.astype(dtype) for a in (rng.standard_normal((w, d)), rng.standard_normal(w),
                                            rng.standard_normal((w, w)) / 2, rng.standard_normal(w),
                                            rng.standard_normal(w)))


def test_laplacian_of_a_two_layer_mlp_against_second_differences():
    # (the dense Hessian's trace is checked in test_sparse_derivatives.py, where that
    # Hessian is built anyway)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(7)
    weights = _weights(rng, 7, 5, np.float64)
    h = 1e-4
    fd = sum((mlp(x + h * e, *weights) - 2 * mlp(x, *weights) + mlp(x - h * e, *weights)) / h ** 2
             for e in np.eye(7))
    np.testing.assert_allclose(zymase.laplacian(mlp)(x, *weights), fd, rtol=1e-6, atol=1e-6)


def test_laplacian_of_a_composed_layer_against_its_closed_form():
    # W2 = I, b2 = 0: f = sum_j w3_j g(z_j) with g = tanh o tanh and z = W1 x + b1, so
    # the Laplacian is sum_j w3_j g''(z_j) |W1_j|^2, g'' = tanh''(h) h'^2 + tanh'(h) h''
    rng = np.random.default_rng(2)
    d, w = 7, 5  # the shapes of the test above: its kernel
    x = rng.standard_normal(d)
    W1, b1 = rng.standard_normal((w, d)) / 3, rng.standard_normal(w)
    W2, b2, w3 = np.eye(w), np.zeros(w), rng.standard_normal(w)
    h = np.tanh(W1 @ x + b1)
    dh, ddh = 1 - h * h, -2 * h * (1 - h * h)  # tanh' and tanh'' at z
    t = np.tanh(h)
    dt, ddt = 1 - t * t, -2 * t * (1 - t * t)  # at h
    sq = np.sum(W1 * W1, axis=1)
    exact = np.sum(w3 * (ddt * dh * dh * sq + dt * ddh * sq))
    np.testing.assert_allclose(zymase.laplacian(mlp)(x, W1, b1, W2, b2, w3), exact, rtol=1e-12)


@njit
def layer(x, W, b, w2):
    """As a NumPy user writes it: W @ x calls Numba's gemv wrapper ('t' on a C-order W)."""
    return np.dot(w2, np.tanh(W @ x + b))


@njit
def layer_transposed(x, Wt, b, w2):
    return np.dot(w2, np.tanh(x @ Wt + b))  # gemv with 'n'


def _layer_data(dtype):
    rng = np.random.default_rng(3)
    return tuple(a.astype(dtype) for a in (rng.standard_normal(6), rng.standard_normal((4, 6)),
                                            rng.standard_normal(4), rng.standard_normal(4)))


def test_float32_laplacian_through_a_matrix_vector_product():
    # Laplacian of sum_j w2_j tanh(W_j . x + b_j) = sum_j w2_j tanh''(z_j) |W_j|^2
    x, W, b, w2 = _layer_data(np.float32)
    lap = zymase.laplacian(layer)(x, W, b, w2)
    assert isinstance(lap, np.float32)
    x, W, b, w2 = _layer_data(np.float64)
    t = np.tanh(W @ x + b)
    np.testing.assert_allclose(lap, np.sum(w2 * -2 * t * (1 - t * t) * np.sum(W * W, axis=1)), rtol=1e-5)


def test_gradient_through_a_vector_matrix_product():
    # the gemv loop in reverse mode, with respect to the vector and the matrix
    x, W, b, w2 = _layer_data(np.float64)
    gx, gW = zymase.grad(layer_transposed, argnums=(0, 1))(x, W.T.copy(), b, w2)
    dz = w2 * (1 - np.tanh(W @ x + b) ** 2)
    np.testing.assert_allclose(gx, W.T @ dz, rtol=1e-12)
    np.testing.assert_allclose(gW, np.outer(x, dz), rtol=1e-12)


@njit
def elementwise(x, c):
    """Temporary arrays, division and libm, and a branch per element."""
    y = np.sin(x) * np.exp(0.5 * x) / (2.0 + x * x) - np.log(1.5 + np.cos(x))
    s = 0.0
    for i in range(y.shape[0]):
        if x[i] > c:
            s += y[i] * y[i]
        else:
            s += math.sqrt(1.0 + y[i] ** 4)
    return s


def _piece(t, c):
    y = math.sin(t) * math.exp(0.5 * t) / (2.0 + t * t) - math.log(1.5 + math.cos(t))
    return y * y if t > c else math.sqrt(1.0 + y ** 4)


def test_laplacian_through_temporaries_libm_and_branches_against_differences():
    x = np.array([0.3, -1.2, 2.1, 0.05, -0.4, 1.7])
    c = 0.1
    h = 1e-4  # the function is separable: its Laplacian is a sum of 1-D second differences
    fd = sum((_piece(t + h, c) - 2 * _piece(t, c) + _piece(t - h, c)) / h ** 2 for t in x)
    lap = zymase.laplacian(elementwise)(x, c)
    np.testing.assert_allclose(lap, fd, rtol=1e-6)


def _only_zymase_error(call, *words):
    with pytest.raises(ZymaseError) as info:
        call()
    text = str(info.value)
    assert text.startswith("zymase: error: ") and "Traceback" not in text
    for w in words:
        assert w in text, (w, text)
    return text


@njit
def writes_its_argument(x, scratch):
    for i in range(x.shape[0]):
        scratch[i] = x[i] * x[i]
    return np.sum(scratch)


def test_laplacian_refuses_what_it_does_not_build():
    x = np.array([0.5, -1.0, 2.0])
    _only_zymase_error(lambda: zymase.laplacian(writes_its_argument)(x, np.zeros(3)),
                       "'writes_its_argument'", "must not write into its arguments", "hint: write into a copy")
    _only_zymase_error(lambda: zymase.laplacian(elementwise)(0.5, 0.1), "argument 0 ('x')", "1-D float array")
    _only_zymase_error(lambda: zymase.laplacian(elementwise)(np.ones((2, 2)), 0.1), "shape (2, 2)")
    _only_zymase_error(lambda: zymase.laplacian(zymase.grad(elementwise)), "laplacian of grad", "third")

    @njit
    def vector_valued(x):
        return x * x

    _only_zymase_error(lambda: zymase.laplacian(vector_valued)(x), "laplacian needs", "to return a float")
