#!/usr/bin/env python3
"""What second derivatives of njit functions cost (issue 25 item 3), as ratios of times
measured in one process, the calls alternating round by round (best of each):

- ``hvp(rosen)(x, v)`` at n = 10^4 against the primal ``rosen(x)`` and against the
  gradient ``grad(rosen)(x)``, for Rosenbrock written with ``** 2`` and with products;
- ``hessian(f)(x)`` of a small function (n = 8) against n separate ``hvp`` calls
  (the Hessian is one forward-over-reverse call per column, so the ratio is the
  assembly overhead).

Compile time is excluded (every call is made once before timing).

    python bench/second_order.py [--n 10000] [--small 8] [--rounds 7]
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


def _time(call, min_seconds: float = 0.05) -> float:
    """Seconds per call: repeat until ``min_seconds`` have passed."""
    reps, t = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(reps):
            call()
        t = time.perf_counter() - t0
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
    p.add_argument("--rounds", type=int, default=7)
    ns = p.parse_args()

    rng = np.random.default_rng(0)
    x, v = rng.uniform(-1, 1, ns.n), rng.uniform(-1, 1, ns.n)
    for f in (rosen, rosen_products):
        g, h = zymase.grad(f), zymase.hvp(f)
        best = _race({"primal": lambda: f(x), "grad": lambda: g(x), "hvp": lambda: h(x, v)}, ns.rounds)
        print(f"{f.py_func.__name__}, n = {ns.n}:")
        for k, t in best.items():
            print(f"  {k:7s} {t * 1e6:10.1f} us")
        print(f"  hvp / primal = {best['hvp'] / best['primal']:.2f}   grad / primal = "
              f"{best['grad'] / best['primal']:.2f}   hvp / grad = {best['hvp'] / best['grad']:.2f}")

    y = rng.uniform(-1, 1, ns.small)
    hess, hv = zymase.hessian(coupled), zymase.hvp(coupled)
    basis = np.eye(ns.small)

    def n_hvps():
        for e in basis:
            hv(y, e)

    np.testing.assert_allclose(hess(y), np.stack([hv(y, e) for e in basis], axis=-1), rtol=1e-12, atol=1e-12)
    best = _race({"primal": lambda: coupled(y), "hessian": lambda: hess(y), "n hvps": n_hvps}, ns.rounds)
    print(f"dense coupled function, n = {ns.small}:")
    for k, t in best.items():
        print(f"  {k:8s} {t * 1e6:10.1f} us")
    print(f"  hessian / n hvps = {best['hessian'] / best['n hvps']:.2f}   "
          f"hessian / primal = {best['hessian'] / best['primal']:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
