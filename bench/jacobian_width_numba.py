"""zymase.jacfwd / jacrev of an njit stencil R^n -> R^n with vector modes (CHUNK = 8
lanes per kernel call) against one lane per call (CHUNK = 1, what they did before):
the two settings alternate in one process, medians of the repeats, kernels compiled
before timing. Issue 25 item 2, the Python Jacobians.

    python bench/jacobian_width_numba.py [n] [repeats]
"""

import math
import sys
import time

import numpy as np
from numba import njit

import zymase
import zymase.api  # noqa: F401  (api_outputs is imported through it)
from zymase import api_outputs


@njit
def stencil(x, a):
    n = x.shape[0]
    out = np.empty(n)
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i + 1 < n else 0.0
        out[i] = left - 2 * x[i] + right + a * math.exp(-x[i] * x[i]) * math.sin(right)
    return out


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    x, a = np.linspace(-1, 1, n), 0.3
    times = {(name, chunk): [] for name in ("jacfwd", "jacrev") for chunk in (1, 8)}
    results = {}
    for r in range(reps + 1):  # the first round compiles
        for name in ("jacfwd", "jacrev"):
            for chunk in (1, 8):
                api_outputs.CHUNK = chunk
                t = time.perf_counter()
                results[(name, chunk)] = getattr(zymase, name)(stencil)(x, a)
                if r:
                    times[(name, chunk)].append(time.perf_counter() - t)
    t = time.perf_counter()
    for _ in range(10):
        stencil(x, a)
    primal = (time.perf_counter() - t) / 10
    print(f"n={n}, median of {reps} (shared machine), primal call {primal * 1e6:.1f} us")
    for name in ("jacfwd", "jacrev"):
        w1, w8 = (float(np.median(times[(name, c)])) for c in (1, 8))
        diff = float(np.abs(results[(name, 1)] - results[(name, 8)]).max())
        print(f"{name}: width 1 {w1 * 1e3:.2f} ms, width 8 {w8 * 1e3:.2f} ms, ratio {w8 / w1:.2f}, "
              f"max |difference| {diff:.1e}")


if __name__ == "__main__":
    main()
