"""The rest of test_linalg.py's cases (issue 26 item 3), run by name, outside the default
suite (Numba compiles np.linalg.solve, lstsq and np.kron slowly: up to a minute of CPU
each):

    pytest -q tests/numba/linalg_campaign.py
"""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError
from test_linalg import RNG, _check, cholesky_of_gram, decompositions


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


# ---- LU, eigen, SVD, least squares (issue 26 item 3: inv, det, slogdet, eigh, eigvalsh,
# svd, pinv, lstsq) ------------------------------------------------------------------------
def test_decompositions_float32():
    _check(decompositions, [RNG.random((4, 4)) + 2 * np.eye(4), RNG.random((4, 3))], np.float32, 5e-3)


@njit
def least_squares(A, b, C, D):
    # numba_ez_gelsd: overdetermined with one right-hand side, underdetermined (the
    # minimum-norm solution) with two; np.linalg.pinv: numba_ez_gesdd and a product
    x = np.linalg.lstsq(A, b)[0]
    Y = np.linalg.lstsq(C, D)[0]
    return np.sum(x ** 3) + np.sum(np.sin(Y)) + np.sum(np.linalg.pinv(A) ** 2)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-6), (np.float32, 5e-3)])
def test_lstsq_and_pinv(dtype, rtol):
    _check(least_squares, [RNG.random((5, 3)), RNG.random(5), RNG.random((3, 5)), RNG.random((3, 2))], dtype, rtol)


@njit
def full_svd(A, B):
    # full_matrices=True: square (all of U and V^T defined) and rectangular read only
    # where the derivative is defined (the first min(m, n) columns of U, all of V^T, n < m)
    U, s, Vt = np.linalg.svd(A)
    P, t, Qt = np.linalg.svd(B)
    return np.sum(s ** 2) + np.sum((U * U) @ (Vt * Vt)) + np.sum(t) + np.sum(P[:, :3] ** 2 * P[:, :3] ** 2) \
        + np.sum(Qt[0] ** 2 * Qt[1] ** 2)


def test_full_svd_where_defined():
    _check(full_svd, [RNG.random((3, 3)), RNG.random((5, 3))], np.float64, 1e-6)


@njit
def svd_complement(B):
    U, s, Vt = np.linalg.svd(B)
    return np.sum(U[:, 3:] ** 3)  # columns spanning the complement: no unique basis


def test_full_svd_complement_is_nan_not_a_number():
    # documented: the complement's basis is not a function of B, so its derivative is NaN
    # in both modes rather than a plausible number
    B = RNG.random((5, 3))
    assert np.isnan(zymase.grad(svd_complement)(B)).all()
    _, dy = zymase.jvp(svd_complement, (B,), (np.ones_like(B),))
    assert np.isnan(dy)


@njit
def eigen_of(S):
    w, V = np.linalg.eigh(S)
    return np.sum(w * w), np.sum(V[:, 0] * np.arange(1.0, 4.0))


def test_repeated_eigenvalues_give_inf_or_nan_for_the_eigenvectors():
    # documented caveat: at a repeated eigenvalue the eigenvalues keep their derivative
    # (closed form: sum(w^2) = ||S||_F^2 of the symmetric matrix read from the lower
    # triangle: 2 S on the diagonal, 4 S below it, 0 above), the eigenvectors have none
    S = np.diag([1.0, 1.0, 2.0])
    values = zymase.grad(njit(lambda S: eigen_of(S)[0]))(S.copy())
    np.testing.assert_allclose(values, 2 * np.tril(S) + 2 * np.tril(S, -1), atol=1e-12)
    vectors = zymase.grad(njit(lambda S: eigen_of(S)[1]))(S.copy())
    assert not np.isfinite(vectors).all()
    _, dy = zymase.jvp(njit(lambda S: eigen_of(S)[1]), (S.copy(),), (np.tril(RNG.random((3, 3))),))
    assert not np.isfinite(dy)


# ---- np.linalg.qr: numba_ez_geqrf + numba_ez_xxgqr (issue 26 item 3; a tall matrix in
# float64: test_linalg.py) -------------------------------------------------------------------
@njit
def qr_of(A, B):
    # reduced QR of a tall A (Q 5 x 3, R 3 x 3) and a wide B (m < n: Q 3 x 3, R 3 x 5, its
    # last two columns Q^T B's), both outputs used
    Q, R = np.linalg.qr(A)
    P, S = np.linalg.qr(B)
    return np.sum(np.sin(Q)) + np.sum(R * R * R) + np.sum(np.cos(P) * P) + np.sum(S ** 3)


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-6), (np.float32, 5e-3)])
def test_qr_tall_and_wide(dtype, rtol):
    _check(qr_of, [RNG.random((5, 3)), RNG.random((3, 5))], dtype, rtol)


@njit
def qr_square_r_only(A):
    # a square matrix, only R used: Q's adjoint is zero, its tangent unread
    R = np.linalg.qr(A)[1]
    return np.sum(np.tanh(R))


def test_qr_square_r_only():
    _check(qr_square_r_only, [RNG.random((4, 4)) + np.eye(4)], np.float64, 1e-6)



@njit
def qr_in_a_loop(A):
    # one QR per iteration on a matrix the loop changes: the reverse sweep fetches each
    # iteration's kept state from the tape
    s = 0.0
    for k in range(3):
        Q, R = np.linalg.qr(A * (k + 1.0) + np.sin(A) * k)
        s += np.sum(Q[:3, 0] * R[0]) + np.sum(R ** 2) * (k + 1)
    return s


def test_qr_in_a_loop():
    _check(qr_in_a_loop, [RNG.random((4, 3))], np.float64, 1e-6)

# ---- Numba's QR helpers called other than np.linalg.qr calls them (issue 26 item 3 and 5:
# no silent wrong answer) ------------------------------------------------------------------
def _qr_helpers():
    from numba.core import types
    from numba.np.linalg import _LAPACK

    return _LAPACK().numba_ez_geqrf(types.float64), _LAPACK().numba_ez_xxgqr(types.float64)


_GEQRF, _XXGQR = _qr_helpers()


@njit
def q_without_geqrf(A):
    q = np.asfortranarray(A * 1.0)
    tau = np.ones(3)
    _XXGQR(100, 4, 3, 3, q.ctypes, 4, tau.ctypes)
    return np.sum(q)


def test_xxgqr_without_geqrf_is_refused():
    with pytest.raises(ZymaseError, match=r"^zymase: error: .*'numba_ez_xxgqr' \(np\.linalg\.qr\) is not preceded "
                                          r"by the 'numba_ez_geqrf' call on the same array") as info:
        zymase.grad(q_without_geqrf)(RNG.random((4, 3)))
    assert "Traceback" not in info.value.message


@njit
def reflectors_read(A):
    q = np.asfortranarray(A * 1.0)
    tau = np.empty(3)
    _GEQRF(100, 4, 3, q.ctypes, 4, tau.ctypes)
    s = q[3, 0] + tau[0]  # the Householder form, which has no derivative of its own
    _XXGQR(100, 4, 3, 3, q.ctypes, 4, tau.ctypes)
    return s + np.sum(q)


def test_reading_the_householder_form_gives_nan():
    A = RNG.random((4, 3))
    assert np.isnan(zymase.grad(reflectors_read)(A.copy())).all()
    _, dy = zymase.jvp(reflectors_read, (A.copy(),), (np.ones_like(A),))
    assert np.isnan(dy)


# ---- sliced (non-contiguous) operands of svd and qr, both modes (issue 26, the remaining
# item 2; the rewrite that makes them work: tests/python/test_aggregate_phis.py) ----------
@njit
def sliced_svd_qr(A):
    # A[:, :3] and A[1:, 1:] have layout 'A': Numba's _copy_to_fortran_order chooses
    # between two array structs at run time (transforms/aggregate_phis.py)
    U, s, Vt = np.linalg.svd(A[:, :3], full_matrices=False)
    Q, R = np.linalg.qr(A[1:, 1:])
    return np.sum(s ** 3) + np.sum((U * U) @ (Vt * Vt)) + np.sum(np.sin(Q)) + np.sum(R * R * R)


def test_sliced_operands_of_svd_and_qr_float64():
    _check(sliced_svd_qr, [RNG.random((5, 4))], np.float64, 1e-6)
