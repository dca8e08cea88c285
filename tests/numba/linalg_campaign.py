"""The rest of test_linalg.py's cases (issue 26 item 3), run by name, outside the default
suite (Numba compiles np.linalg.solve and np.kron slowly: about a minute of CPU each):

    pytest -q tests/numba/linalg_campaign.py
"""

import numpy as np
import pytest
from numba import njit

import zymase
from test_linalg import RNG, _check, check_refused, cholesky_of_gram


# ---- loops in Numba: np.outer, np.trace, np.kron (already differentiated, no rule) -------
@njit
def outer_trace_kron(x, y, M):
    return np.trace(np.outer(x, y) @ M) + np.sum(np.kron(M, x[:2].reshape(1, 2)) ** 2)


def test_outer_trace_kron():
    _check(outer_trace_kron, [RNG.random(3), RNG.random(3), RNG.random((3, 3))], np.float64, 1e-6)


# ---- numba_xgesv, and numba_xxpotrf in float32 -------------------------------------------
@njit
def solve_two(A, b, B):
    x = np.linalg.solve(A, b)  # one right-hand side (a vector)
    X = np.linalg.solve(A.T, B)  # several, with a transposed matrix
    return np.sum(x * x) + np.sum(np.sin(X))


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-6), (np.float32, 5e-3)])
def test_solve(dtype, rtol):
    A = RNG.random((4, 4)) + 4 * np.eye(4)
    _check(solve_two, [A, RNG.random(4), RNG.random((4, 3))], dtype, rtol)


def test_cholesky_float32():
    _check(cholesky_of_gram, [RNG.random((4, 4))], np.float32, 5e-3)


def test_cholesky_of_indefinite_matrix_raises_numpys_error():
    # no derivative is computed: the primal's LinAlgError propagates
    @njit
    def f(A):
        return np.sum(np.linalg.cholesky(A))

    with pytest.raises(np.linalg.LinAlgError):
        zymase.grad(f)(-np.eye(3))


# ---- refusals: named after the NumPy function -------------------------------------------
@njit
def uses_eigvalsh(A):
    return np.sum(np.linalg.eigvalsh(A))


def test_eigvalsh_is_refused_by_numpy_name():
    # (np.linalg.det: tests/numba/test_errors.py; np.linalg.qr: test_linalg.py)
    check_refused(uses_eigvalsh, r"np\.linalg\.eigh")
