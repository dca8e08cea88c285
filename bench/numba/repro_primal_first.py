"""Reproducer (zymase bug): zymase.grad fails on this function if Numba compiled it first.

    python bench/numba/repro_primal_first.py            # grad only: prints the gradient
    python bench/numba/repro_primal_first.py --primal   # f(u0, 20) first: ZymaseError

The error (at HEAD 4ca95c9): "cannot deduce a single floating-point type for the memory
that the result of 'call @NRT_MemInfo_data_fast' points to, copied by this memcpy: bytes
[16, 24) are accessed with contradictory types". The Fisher-KPP workload (kpp.py) hits
it; run.py therefore compiles zymase's gradient before the first Numba call.
"""

import sys

import numba
import numpy as np

import zymase


@numba.njit
def f(u0, nsteps):
    n = u0.shape[0]
    u = u0.copy()
    v = np.empty(n)
    for _ in range(nsteps):
        for i in range(n):
            left = u[i - 1] if i > 0 else u[i]
            v[i] = u[i] + 0.1 * left
        u, v = v, u
    return u[0]


u0 = np.linspace(0.1, 0.9, 8)
if "--primal" in sys.argv:
    f(u0, 20)  # an ordinary Numba call before zymase.grad
print(zymase.grad(f)(u0, 20))
