"""The serial heat equation of bench/heat_serial.c in njit code: gradient / primal in
process CPU time (minimum of 7 calls each; issue 27, the reverse of stencil loops,
src/zymase/autodiff/stencil_gather.py). A/B: run once more with ZYMASE_NO_GATHER=1.

    python bench/numba_heat.py [label]
"""
import sys, time
import numpy as np
from numba import njit
import zymase

@njit
def heat(u, steps):
    a = u.copy()
    b = np.empty_like(a)
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            b[i] = a[i] + 0.25 * (a[i - 1] - 2.0 * a[i] + a[i + 1])
        b[0] = a[0]
        b[n - 1] = a[n - 1]
        a, b = b, a
    s = 0.0
    for i in range(n):
        s += a[i] * (1.0 + 0.001 * (i % 97))
    return s

n, steps = 100000, 100
u = 0.5 + 0.4 * np.sin(0.01 * np.arange(n))
g = zymase.grad(heat, cache=False)
g(u, steps); heat(u, steps)
def best(f, k=7):
    t = 1e9
    for _ in range(k):
        t0 = time.process_time(); f(); t = min(t, time.process_time() - t0)
    return t
tp = best(lambda: heat(u, steps)); tg = best(lambda: g(u, steps))
print(f"{sys.argv[1] if len(sys.argv) > 1 else 'heat'}: primal {tp*1e3:.1f} ms gradient {tg*1e3:.1f} ms ratio {tg/tp:.2f} check {float(np.sum(g(u, steps)[:50])):.12g}")
