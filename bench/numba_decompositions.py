#!/usr/bin/env python3
"""np.linalg's decompositions in njit code (issue 26 item 3: inv, slogdet, eigh, svd,
lstsq, qr): the cost of zymase.grad against the primal, in one process, the two run
alternately round after round on the same input; reported as the ratio of the best
times. The derivative rules factor the input again (the C path's LAPACK rules, reused),
so a gradient costs the primal's decomposition twice plus a few BLAS-3 products (qr:
Q formed once more from the kept Householder form, orgqr).

    python bench/numba_decompositions.py [--n 300] [--rounds 5]

Set OPENBLAS_NUM_THREADS alike for every run; the machine's load makes single timings
noisy, hence the alternating rounds and the minima.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

import zymase


@njit
def inv_sum(A):
    return np.sum(np.sin(np.linalg.inv(A)))


@njit
def logdet(A):
    return np.linalg.slogdet(A)[1]


@njit
def eigh_sum(A):
    w, V = np.linalg.eigh(A + A.T)
    return np.sum(w * w) + np.sum(V[:, -1] ** 4)


@njit
def svd_sum(A):
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    return np.sum(s ** 3) + np.sum(U[:, 0] ** 4)


@njit
def qr_sum(A):
    Q, R = np.linalg.qr(A)
    return np.sum(Q ** 3) + np.sum(R * R)


@njit
def lstsq_sum(A, b):
    return np.sum(np.linalg.lstsq(A, b)[0] ** 2)


def _best(f, args, rounds):
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        f(*args)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", help="run the one case of this name (inv, slogdet, eigh, svd, lstsq, qr)")
    opts = ap.parse_args()
    rng = np.random.default_rng(0)
    n = opts.n
    A = rng.random((n, n)) + n * np.eye(n) / 4
    cases = [("inv", inv_sum, (A,)), ("slogdet", logdet, (A,)), ("eigh", eigh_sum, (A,)),
             ("svd", svd_sum, (A,)), ("lstsq", lstsq_sum, (rng.random((2 * n, n)), rng.random(2 * n))),
             ("qr", qr_sum, (rng.random((2 * n, n)),))]
    cases = [c for c in cases if opts.only in (None, c[0])]
    print(f"n = {n}, best of {opts.rounds} alternating rounds")
    for name, f, args in cases:
        grad = zymase.grad(f, argnums=tuple(range(len(args))))
        f(*args), grad(*args)  # compile
        primal = gradient = float("inf")
        for _ in range(opts.rounds):
            primal = min(primal, _best(f, args, 1))
            gradient = min(gradient, _best(grad, args, 1))
        print(f"{name:8s} primal {primal * 1e3:8.2f} ms  gradient {gradient * 1e3:8.2f} ms  "
              f"ratio {gradient / primal:5.2f}")


if __name__ == "__main__":
    main()
