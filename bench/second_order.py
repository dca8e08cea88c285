#!/usr/bin/env python3
"""What second derivatives of njit functions cost (issue 25 item 3), as ratios of times
measured in one process, the calls alternating round by round (best of each):

- ``hvp(rosen)(x, v)`` at n = 10^4 against the primal ``rosen(x)`` and against the
  gradient ``grad(rosen)(x)``, for Rosenbrock written with ``** 2`` and with products;
- ``hessian(f)(x)`` of a small dense function (n = 8) against n separate ``hvp`` calls
  (the Hessian is one vector forward-over-reverse call per 8 columns: one reverse
  sweep, eight tangent lanes; n ``hvp`` calls are n sweeps);
- dense Hessians at ``--dense`` sizes (32 and 64): ``hessian`` of the dense function and
  of Rosenbrock against n ``hvp`` calls and against the primal.

Compile time is excluded (every call is made once before timing). ``--clock cpu`` times
the process's CPU time instead of wall time (steadier on a loaded machine). Run it with
another source tree first on PYTHONPATH to compare before and after.

    python bench/second_order.py [--n 10000] [--small 8] [--dense 32 64] [--rounds 7] [--clock wall|cpu]
        [--skip-hvp]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

import zymase


@njit
def rosen(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


@njit
def rosen_products(x):
    """Rosenbrock with the squares written as products (Numba lowers ``** 2`` to its
    ``int_power`` loop, which zymase unrolls before AD: both forms should cost alike)."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] * x[i]
        e = 1.0 - x[i]
        s += 100.0 * d * d + e * e
    return s


@njit
def coupled(x):
    """A dense small function: every pair of inputs interacts."""
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            s += np.sin(x[i] * x[j]) / (1.0 + (i - j) ** 2)
    return s


#: the clock calls are timed with (``--clock``)
CLOCK = time.perf_counter


def _time(call, min_seconds: float = 0.05) -> float:
    """Seconds per call: repeat until ``min_seconds`` have passed."""
    reps, t = 1, 0.0
    while True:
        t0 = CLOCK()
        for _ in range(reps):
            call()
        t = CLOCK() - t0
        if t >= min_seconds:
            return t / reps
        reps *= 2


def _race(calls: dict, rounds: int) -> dict:
    """Best seconds per call of each entry, the entries alternating round by round."""
    for c in calls.values():
        c()  # compile
    best = {k: float("inf") for k in calls}
    for _ in range(rounds):
        for k, c in calls.items():
            best[k] = min(best[k], _time(c))
    return best


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--small", type=int, default=8)
    p.add_argument("--dense", type=int, nargs="*", default=[32, 64])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    p.add_argument("--skip-hvp", action="store_true", help="only the Hessians")
    ns = p.parse_args()
    global CLOCK
    CLOCK = time.process_time if ns.clock == "cpu" else time.perf_counter
    print(f"zymase from {zymase.__file__}; {ns.clock} times, best of {ns.rounds} alternating rounds")

    rng = np.random.default_rng(0)
    x, v = rng.uniform(-1, 1, ns.n), rng.uniform(-1, 1, ns.n)
    for f in () if ns.skip_hvp else (rosen, rosen_products):
        g, h = zymase.grad(f), zymase.hvp(f)
        best = _race({"primal": lambda: f(x), "grad": lambda: g(x), "hvp": lambda: h(x, v)}, ns.rounds)
        print(f"{f.py_func.__name__}, n = {ns.n}:")
        for k, t in best.items():
            print(f"  {k:7s} {t * 1e6:10.1f} us")
        print(f"  hvp / primal = {best['hvp'] / best['primal']:.2f}   grad / primal = "
              f"{best['grad'] / best['primal']:.2f}   hvp / grad = {best['hvp'] / best['grad']:.2f}")

    for f, n in [(coupled, ns.small)] + [(f, n) for n in ns.dense for f in (coupled, rosen)]:
        _dense_hessian(f, rng.uniform(-1, 1, n), ns.rounds)
    return 0


def _dense_hessian(f, y, rounds: int) -> None:
    """``hessian(f)(y)`` against n ``hvp`` calls (basis vectors) and the primal."""
    hess, hv = zymase.hessian(f), zymase.hvp(f)
    basis = np.eye(y.size)

    def n_hvps():
        for e in basis:
            hv(y, e)

    np.testing.assert_allclose(hess(y), np.stack([hv(y, e) for e in basis], axis=-1), rtol=1e-12, atol=1e-12)
    best = _race({"primal": lambda: f(y), "hessian": lambda: hess(y), "n hvps": n_hvps}, rounds)
    print(f"dense Hessian of {f.py_func.__name__}, n = {y.size}:")
    for k, t in best.items():
        print(f"  {k:8s} {t * 1e6:10.1f} us")
    print(f"  hessian / n hvps = {best['hessian'] / best['n hvps']:.2f}   "
          f"hessian / primal = {best['hessian'] / best['primal']:.1f}")


if __name__ == "__main__":
    raise SystemExit(main())
