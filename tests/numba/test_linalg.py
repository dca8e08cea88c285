"""NumPy linear algebra in njit functions (issue 26 item 3): '@', np.dot, np.matmul,
np.linalg.cholesky, solve, norm, inv, det, slogdet, eigh, eigvalsh, svd, pinv, lstsq and qr
differentiated at the level of Numba's BLAS/LAPACK helpers
(autodiff/rules/numba_linalg.py), checked against central finite differences in
reverse (zymase.grad) and forward (zymase.jvp) mode, float64 and float32; square and
rectangular shapes, transposed and sliced (non-contiguous) operands (svd and qr of
slices, whose copy Numba makes through a phi of array structs: linalg_campaign.py, the
rewrite itself: tests/python/test_aggregate_phis.py). Second order through '@' and np.dot
(loops in nested kernels), and its refusal through the other functions, naming them. The functions Numba
writes as loops (np.outer, np.trace, np.kron) are checked too; the NumPy functions
without a rule (np.linalg.eig, eigvals) are refused naming the NumPy function.

Numba's own compilation of np.linalg is slow (about a minute of CPU per kernel for
np.linalg.solve on the shared machine), so this file (the default suite) runs the
products in both precisions, Cholesky, the LU/eigen/SVD group (one function, one kernel
per mode) and QR of a tall matrix in float64, a Hessian through the products and two
refusals; tests/numba/linalg_campaign.py, run by name, holds the rest (solve, lstsq, pinv,
full SVD, QR of a wide matrix, sliced operands of svd and qr, float32 of every group,
outer/trace/kron, the degenerate cases, the other refusals):

    pytest -q tests/numba/linalg_campaign.py
"""

import os
import re

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError

RNG = np.random.default_rng(26)


def _fd_gradient(f, args, i, h):
    """Central differences of the float f(*args) with respect to array args[i]."""
    x = args[i]
    g = np.zeros(x.shape)
    for k in range(x.size):
        up = [a.copy() for a in args]
        up[i].flat[k] += h
        down = [a.copy() for a in args]
        down[i].flat[k] -= h
        g.flat[k] = (float(f(*up)) - float(f(*down))) / (2 * h)
    return g


def _check(f, args, dtype, rtol, forward=True):
    """Reverse mode against finite differences (float64 differences: the float32 call
    is compared with the float64 function), then forward mode along one direction. The
    differences are NumPy's (``f.py_func``): calling ``f`` would make Numba compile it
    once more, np.linalg overloads and all (zymase.grad compiles its own copy), several
    seconds of the suite per function."""
    args = [a.astype(dtype) for a in args]
    wide = [a.astype(np.float64) for a in args]
    h = 1e-6
    grads = zymase.grad(f, argnums=tuple(range(len(args))))(*[a.copy() for a in args])
    for i, g in enumerate(grads):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, _fd_gradient(f.py_func, wide, i, h), rtol=rtol, atol=rtol)
    if not forward:
        return
    tangents = tuple(RNG.standard_normal(a.shape).astype(dtype) for a in args)
    _, dy = zymase.jvp(f, tuple(a.copy() for a in args), tangents)
    expected = sum(float(np.sum(g.astype(np.float64) * t)) for g, t in zip(grads, tangents))
    np.testing.assert_allclose(float(dy), expected, rtol=rtol, atol=rtol)


# ---- products: numba_xxgemm / numba_xxgemv (issue 26 item 3, first group) ---------------
@njit
def products(A, B, S, x):
    # A @ B rectangular (gemm); A.T @ S[:, ::2]: an F-ordered operand (gemm transposes it)
    # and a sliced, non-contiguous one (Numba copies it first); np.dot spells the same
    # product as '@' (Numba 0.68 has no np.matmul); A @ x and y @ A: gemv both ways, and
    # A.T @ y on the F-ordered transpose
    C = A @ B
    D = np.dot(A.T, S[:, ::2])
    E = D @ D.T  # square
    y = A @ x
    z = y @ A
    w = A.T @ y
    return np.sum(C * C) + np.sum(np.sin(E)) + np.sum(np.cos(z)) + np.dot(w, w)


@njit
def products_small(A, B, x):
    C = A @ B
    y = x @ A.T
    return np.sum(C * C) + np.sum(np.sin(y))


def test_products_float64_reverse_and_forward():
    _check(products, [RNG.random((4, 3)), RNG.random((3, 5)), RNG.random((4, 6)), RNG.random(3)], np.float64, 1e-6)


def test_products_float32_reverse():
    _check(products_small, [RNG.random((4, 3)), RNG.random((3, 5)), RNG.random(3)], np.float32, 2e-3,
           forward=False)


@njit
def product_input_overwritten(A, B):
    D = 2.0 * A
    C = D @ B
    D[0, 0] = 2.0  # after the product: its reverse must read a copy of D for B's adjoint
    return np.sum(np.tanh(C)) + D[0, 0] * D[1, 1]


def test_product_inputs_copied_only_when_overwritten():
    # issue 26 (caching, and the GP/MLP performance item): an argument of '@' is read again
    # by the reverse sweep when nothing writes it after the call (B here; Numba's error
    # paths, which never reach the reverse sweep, do not count), copied when the function
    # writes it (D; a write into an argument would copy B too: arguments may share
    # memory). The kernel's final LLVM IR is the disk cache's entry.
    from pathlib import Path

    args = [RNG.random((4, 3)), RNG.random((3, 5))]
    cache = Path(os.environ["ZYMASE_CACHE_DIR"])
    before = set(cache.glob("*.numba.ll"))
    grads = zymase.grad(product_input_overwritten, argnums=(0, 1), cache=True)(*[a.copy() for a in args])
    (entry,) = set(cache.glob("*.numba.ll")) - before
    copies = re.findall(r"call [^\n]*@__zymase_nblas_dxxgemm_save\(", entry.read_text())
    assert len(copies) == 1, copies  # D's copy only
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, _fd_gradient(product_input_overwritten.py_func, args, i, 1e-6), rtol=1e-6,
                                   atol=1e-6)


# ---- numba_xxpotrf and numba_xxnrm2 (np.linalg.solve: linalg_campaign.py) ---------------
@njit
def cholesky_of_gram(A):
    # and np.linalg.norm (numba_xxnrm2): the Frobenius norm of a matrix, a strided column
    n = A.shape[0]
    L = np.linalg.cholesky(A @ A.T + n * np.eye(n))
    return np.sum(L * L * L) + np.linalg.norm(L) + np.linalg.norm(L[:, 1])


def test_cholesky_float64():
    _check(cholesky_of_gram, [RNG.random((4, 4))], np.float64, 1e-6)


def test_cholesky_adjoint_by_blocks_float64():
    # issue 26 performance (GP likelihood): the Cholesky adjoint computed by blocks (32-wide
    # at n = 70: two full blocks and a remainder, so every block step runs; n = 4 above:
    # 2-wide), against central differences along random directions (a difference per
    # entry would be 2 n^2 Choleskys)
    # (the kernel of test_cholesky_float64: no compilation of its own)
    M = RNG.standard_normal((70, 70))
    g = zymase.grad(cholesky_of_gram)(M.copy())
    for _ in range(2):
        V = RNG.standard_normal(M.shape)
        h = 1e-6
        fd = (cholesky_of_gram.py_func(M + h * V) - cholesky_of_gram.py_func(M - h * V)) / (2 * h)
        np.testing.assert_allclose(np.sum(g * V), fd, rtol=1e-6)


# ---- LU, eigen and SVD helpers (issue 26 item 3: inv, det, slogdet, eigh, eigvalsh, svd) --
@njit
def decompositions(A, B):
    # numba_xxgetrf (det, slogdet) and numba_ez_xxgetri (inv) on a general A;
    # numba_ez_xxxevd with eigenvectors (eigh) and without (eigvalsh) on a symmetric
    # matrix of distinct eigenvalues; numba_ez_gesdd (thin svd) on a rectangular B.
    # Eigen/singular vectors enter through sign-free expressions (squares, products of
    # matching pairs)
    sign, logdet = np.linalg.slogdet(A)
    inv = np.linalg.inv(A)
    M = A + A.T
    w, V = np.linalg.eigh(M)
    U, s, Vt = np.linalg.svd(B, full_matrices=False)
    return (np.linalg.det(A) + sign * logdet + np.sum(np.sin(inv)) + np.sum(w * w * w)
            + np.sum((V[:, 0] * V[:, 1]) ** 2) + np.sum(np.linalg.eigvalsh(M) ** 2)
            + np.sum(s ** 3) + np.sum((U * U) @ (Vt * Vt)))


def test_decompositions_float64():
    # about 33 s of CPU on the shared machine (Numba's compilation of the np.linalg
    # overloads, one reverse and one forward kernel): one function for the whole group
    _check(decompositions, [RNG.random((4, 4)) + 2 * np.eye(4), RNG.random((4, 3))], np.float64, 1e-6)


# ---- numba_ez_geqrf + numba_ez_xxgqr: np.linalg.qr (issue 26 item 3, the last NumPy
# function) ---------------------------------------------------------------------------------
@njit
def qr_of_tall(A):
    # reduced QR of a tall A (Q 4 x 3, R 3 x 3), both outputs used: R's tangent and adjoint
    # pass through geqrf's output (copied out between the two calls), Q's through xxgqr's.
    # About 12 s of CPU (Numba's compilation of np.linalg.qr, a reverse and a forward
    # kernel); the wide case (m < n), float32 and R alone: linalg_campaign.py
    Q, R = np.linalg.qr(A)
    return np.sum(np.sin(Q)) + np.sum(R * R * R)


def test_qr_float64_reverse_and_forward():
    _check(qr_of_tall, [RNG.random((4, 3))], np.float64, 1e-6)


# ---- second order (issue 26, the remaining item 3) ----------------------------------------
@njit
def products_twice(A, B):
    # '@' of a C-order and a transposed (F-order) matrix and 2-D np.dot (numba_xxgemm):
    # nested kernels define it as loops (as numba_xxgemv, W @ x, already was)
    C = A @ B.T
    D = np.dot(A.T, C)
    return np.sum(np.sin(C)) + np.sum(D * D)


def _fd_hessian(f, args, i, h):
    """Central second differences of the float f(*args) in array args[i]."""
    x = args[i]
    n = x.size
    H = np.zeros((n, n))

    def at(dk, dl):
        moved = [a.copy() for a in args]
        moved[i].flat[dk[0]] += dk[1]
        moved[i].flat[dl[0]] += dl[1]
        return float(f(*moved))

    for k in range(n):
        for m in range(n):
            H[k, m] = (at((k, h), (m, h)) - at((k, h), (m, -h)) - at((k, -h), (m, h)) + at((k, -h), (m, -h))) / (4 * h * h)
    return H


def test_hessian_through_matrix_products():
    # forward over reverse through '@' and np.dot, against second differences of the
    # pure-Python function
    args = [RNG.random((2, 3)), RNG.random((4, 3))]
    H = zymase.hessian(products_twice)(*[a.copy() for a in args])
    np.testing.assert_allclose(np.asarray(H).reshape(6, 6), _fd_hessian(products_twice.py_func, args, 0, 1e-4),
                               rtol=1e-5, atol=1e-5)


@njit
def cholesky_sum(A):
    return np.sum(np.linalg.cholesky(A) ** 3)


def test_hessian_through_cholesky_is_refused_in_numpy_terms():
    # the first derivative of np.linalg.cholesky is compiled code (numba_linalg_runtime.c):
    # refused naming the NumPy function, not the runtime's __zymase_nblas_* function
    with pytest.raises(ZymaseError) as info:
        zymase.hessian(cholesky_sum)(RNG.random((3, 3)) + 3 * np.eye(3))
    message = str(info.value)
    assert message.startswith("zymase: error: second derivatives through np.linalg.cholesky are not supported"), message
    assert "'cholesky_sum'" in message and "__zymase" not in message and "numba_" not in message, message


# ---- refusals: named after the NumPy function -------------------------------------------
@njit
def uses_eig(A):
    return np.sum(np.linalg.eig(A)[0])


def check_refused(f, name):
    # several NumPy functions share a helper (det, slogdet and inv call numba_xxgetrf)
    with pytest.raises(ZymaseError, match=r"^zymase: error: [^:]*" + name + r"[^:]* has no derivative") as info:
        zymase.grad(f)(RNG.random((3, 3)) + 3 * np.eye(3))
    assert "numba_ez" not in info.value.message


def test_eig_is_refused_by_numpy_name():
    # (np.linalg.eigvals: tests/numba/test_errors.py)
    check_refused(uses_eig, r"np\.linalg\.eig")
