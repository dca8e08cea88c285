"""Sparse Hessians and Jacobians (issue 25 item 4; tests of item 3 of the session brief):
``hessian(f, sparse=True)`` and ``jacfwd(f, sparse=True)`` against the dense
``hessian``/``jacfwd`` and closed forms, on banded, block-diagonal, arrow and dense
patterns; the pattern found in the IR equals the dense matrix's nonzeros, and the
number of sweeps is the colouring's. The Laplacian of the arrow function is checked
against the dense Hessian's trace here, where that Hessian is computed anyway.

Every function is compiled once: the sparse Hessian's Hessian-vector products and the
dense Hessian share one forward-over-reverse kernel."""

import math

import numpy as np
import pytest
import scipy.sparse
from numba import njit

import zymase
from zymase import api_laplacian, api_sparse
from zymase.errors import ZymaseError


@njit
def banded(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] * x[i]
        s += 100.0 * d * d + (1.0 - x[i]) * (1.0 - x[i])
    return s


def banded_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


@njit
def arrow(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        s += np.exp(0.3 * x[0] * x[i]) + x[i] * x[i] * x[i]
    return s


@njit
def blocks(x, k):
    """tanh of the sum of each block of k inputs: dense k x k blocks on the diagonal."""
    s = 0.0
    for b in range(0, x.shape[0], k):
        t = 0.0
        for i in range(b, b + k):
            t += x[i] * (1.0 + 0.1 * i)
        s += np.tanh(t)
    return s


@njit
def dense(x):
    t = 0.0
    for i in range(x.shape[0]):
        t += x[i] * x[i]
    return np.log(1.0 + t)


@njit
def stencil(x):
    """A banded Jacobian (a new array, written at both ends and in a loop)."""
    n = x.shape[0]
    y = np.empty_like(x)
    y[0] = x[0] * x[1]
    y[n - 1] = np.sin(x[n - 1])
    for i in range(1, n - 1):
        y[i] = x[i - 1] - 2.0 * x[i] + x[i + 1] * x[i + 1]
    return y


X = np.array([0.3, -0.7, 1.1, 0.45, 0.9, -0.2, 0.6, 1.3, -1.0])
N = X.size


def _check_sparse_hessian(f, *extra):
    h = zymase.hessian(f, sparse=True)(X, *extra)
    assert isinstance(h, scipy.sparse.csr_matrix) and h.shape == (N, N)
    d = zymase.hessian(f)(X, *extra)
    np.testing.assert_allclose(h.toarray(), d, rtol=1e-12, atol=1e-12)
    # the pattern the IR gives is the dense Hessian's nonzeros, no more, no fewer
    assert {tuple(p) for p in np.argwhere(h.toarray() != 0)} == {tuple(p) for p in np.argwhere(d != 0)}
    return h, d


def test_banded_hessian_takes_three_sweeps():
    h, _ = _check_sparse_hessian(banded)
    assert api_sparse.last["colours"] == 3
    np.testing.assert_allclose(h.toarray(), banded_hessian(X), rtol=1e-12)
    assert (h != h.T).nnz == 0  # each pair computed once and mirrored


def test_block_diagonal_hessian_takes_one_sweep_per_block_column():
    k = 3
    h, _ = _check_sparse_hessian(blocks, k)
    assert api_sparse.last["colours"] == k and h.nnz == N * k
    # closed form: block b is tanh''(t_b) c c^T with c_i = 1 + 0.1 i
    c = 1 + 0.1 * np.arange(N)
    for b in range(0, N, k):
        t = np.tanh(np.dot(X[b:b + k], c[b:b + k]))
        np.testing.assert_allclose(h[b:b + k, b:b + k].toarray(), -2 * t * (1 - t * t) * np.outer(c[b:b + k], c[b:b + k]),
                                   rtol=1e-12)


def test_arrow_hessian_and_the_laplacian_against_its_trace():
    h, d = _check_sparse_hessian(arrow)
    # row 0 is dense, so a distance-2 colouring needs n colours; by symmetry two do
    # (x0 alone, the rest together: entry (0, j) is read as (j, 0) from x0's sweep)
    assert api_sparse.last["colours"] == 2 and h.nnz == 3 * N - 2
    np.testing.assert_allclose(zymase.laplacian(arrow)(X), np.trace(d), rtol=1e-12)
    # the collapsed forward Laplacian (issue 25 item 4), not the Taylor fallback
    assert [how for (f, _), (how, _) in api_laplacian.chosen.items() if f is arrow] == ["collapsed"]


def test_dense_hessian_through_the_sparse_path():
    h, d = _check_sparse_hessian(dense)
    assert api_sparse.last["colours"] == N and h.nnz == N * N
    t = 1 + np.sum(X * X)
    np.testing.assert_allclose(d, 2 * np.eye(N) / t - 4 * np.outer(X, X) / t ** 2, rtol=1e-12)


def test_banded_jacobian_by_colours():
    j = zymase.jacfwd(stencil, sparse=True)(X)
    assert isinstance(j, scipy.sparse.csr_matrix) and j.shape == (N, N)
    assert api_sparse.last["colours"] == 3
    d = zymase.jacfwd(stencil)(X)
    np.testing.assert_allclose(j.toarray(), d, rtol=1e-12)
    exact = np.zeros((N, N))
    exact[0, :2] = X[1], X[0]
    exact[N - 1, N - 1] = np.cos(X[N - 1])
    for i in range(1, N - 1):
        exact[i, i - 1: i + 2] = 1.0, -2.0, 2 * X[i + 1]
    np.testing.assert_allclose(j.toarray(), exact, rtol=1e-12)


@njit
def switched(x):
    """x[i] x[i+1] where x[i] > 0, x[i] elsewhere: the pattern depends on the values."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        if x[i] > 0.0:
            s += x[i] * x[i + 1]
        else:
            s += x[i]
    return s


def test_a_value_dependent_pattern_is_found_again_at_every_call():
    negative = -np.abs(X)
    assert zymase.hessian(switched, sparse=True)(negative).nnz == 0
    h = zymase.hessian(switched, sparse=True)(np.abs(X))  # a reused pattern would be empty
    np.testing.assert_allclose(h.toarray(), zymase.hessian(switched)(np.abs(X)), rtol=1e-12)
    assert h.nnz == 2 * (N - 1)


@njit
def gammas(x):
    return math.gamma(x[0]) * x[1]  # Numba's C helper numba_gamma


@njit
def two_arrays(x, y):
    return np.sum(x * y)


def _only_zymase_error(call, *words):
    with pytest.raises(ZymaseError) as info:
        call()
    text = str(info.value)
    assert text.startswith("zymase: error: ") and "Traceback" not in text
    for w in words:
        assert w in text, (w, text)


def test_what_the_analysis_cannot_follow_is_refused():
    _only_zymase_error(lambda: zymase.hessian(gammas, sparse=True)(np.abs(X)),
                       "cannot find the sparsity pattern of 'gammas'", "numba_gamma", "sparse=False")
    _only_zymase_error(lambda: zymase.hessian(two_arrays, sparse=True)(X, X), "share memory", "sparse=False")
    _only_zymase_error(lambda: zymase.hessian(banded, argnums=(0,), sparse=True), "one argument number")
    _only_zymase_error(lambda: zymase.jacfwd(banded, sparse=True)(X), "to return a contiguous 1-D float array")
