#!/usr/bin/env python3
"""What the Laplacian of an MLP costs (issue 25's performance item), as ratios of times
measured in one process, the calls alternating round by round (best of each):

- ``zymase.laplacian(f)(x, ...)`` (Taylor mode: forward over forward, one jet per unit
  direction, summed in njit code) against the njit primal ``f(x, ...)``;
- against JAX's ``jnp.trace(jax.hessian(f)(x))`` and a JAX loop of n forward-over-reverse
  Hessian-vector products (``lax.fori_loop`` of ``jvp(grad(f))`` summing ``e_i . H e_i``),
  both jitted, and JAX's jitted primal.

f is a tanh MLP with one or two hidden layers of the given width, written as a NumPy user
writes it (``np.tanh(W @ x + b)``), input size d. The Laplacians are checked equal first.
The process is confined to one CPU (XLA's threads would otherwise take the second core),
compile time is excluded.

    python bench/laplacian.py [--dims 16 32 64] [--widths 256 1024] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import time

os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from numba import njit  # noqa: E402

import zymase  # noqa: E402

jax.config.update("jax_enable_x64", True)


@njit
def mlp1(x, W1, b1, w):
    return np.dot(w, np.tanh(W1 @ x + b1))


@njit
def mlp2(x, W1, b1, W2, b2, w):
    return np.dot(w, np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2))


def jmlp1(x, W1, b1, w):
    return jnp.dot(w, jnp.tanh(W1 @ x + b1))


def jmlp2(x, W1, b1, W2, b2, w):
    return jnp.dot(w, jnp.tanh(W2 @ jnp.tanh(W1 @ x + b1) + b2))


def _time(call, min_seconds: float = 0.05) -> float:
    """Seconds per call: repeat until ``min_seconds`` have passed."""
    reps = 1
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


def _jax_laplacians(jf):
    def by_hessian(x, *p):
        return jnp.trace(jax.hessian(jf)(x, *p))

    def by_hvps(x, *p):
        g = jax.grad(jf)

        def body(i, acc):
            e = jnp.zeros_like(x).at[i].set(1.0)
            return acc + jax.jvp(lambda y: g(y, *p), (x,), (e,))[1][i]

        return lax.fori_loop(0, x.shape[0], body, jnp.zeros((), x.dtype))

    return jax.jit(by_hessian), jax.jit(by_hvps)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[16, 32, 64])
    p.add_argument("--widths", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=5)
    ns = p.parse_args()
    print(f"one CPU ({os.sched_getaffinity(0)}), best of {ns.rounds} alternating rounds; times in us")
    print(f"{'layers':>6} {'d':>4} {'width':>5} {'primal':>9} {'zymase':>10} {'jax hess':>10} {'jax hvps':>10}"
          f" {'jax prim':>9} | {'zy/prim':>7} {'zy/jaxH':>7} {'zy/jaxV':>7} {'jaxH/jaxprim':>12}")
    for layers in ns.layers:
        f, jf = (mlp1, jmlp1) if layers == 1 else (mlp2, jmlp2)
        lap = zymase.laplacian(f)
        jhess, jhvps = _jax_laplacians(jf)
        jprim = jax.jit(jf)
        for width in ns.widths:
            for d in ns.dims:
                rng = np.random.default_rng(d + width)
                x = rng.standard_normal(d)
                params = [rng.standard_normal((width, d)) / np.sqrt(d), rng.standard_normal(width)]
                if layers == 2:
                    params += [rng.standard_normal((width, width)) / np.sqrt(width), rng.standard_normal(width)]
                params.append(rng.standard_normal(width) / np.sqrt(width))
                jx, jp = jnp.asarray(x), [jnp.asarray(a) for a in params]
                want = float(jhess(jx, *jp))
                np.testing.assert_allclose(lap(x, *params), want, rtol=1e-9)
                np.testing.assert_allclose(float(jhvps(jx, *jp)), want, rtol=1e-9)
                best = _race({
                    "primal": lambda: f(x, *params),
                    "zymase": lambda: lap(x, *params),
                    "jax hessian": lambda: jhess(jx, *jp).block_until_ready(),
                    "jax hvps": lambda: jhvps(jx, *jp).block_until_ready(),
                    "jax primal": lambda: jprim(jx, *jp).block_until_ready(),
                }, ns.rounds)
                us = {k: v * 1e6 for k, v in best.items()}
                print(f"{layers:>6} {d:>4} {width:>5} {us['primal']:9.1f} {us['zymase']:10.1f} "
                      f"{us['jax hessian']:10.1f} {us['jax hvps']:10.1f} {us['jax primal']:9.1f} | "
                      f"{best['zymase'] / best['primal']:7.1f} {best['zymase'] / best['jax hessian']:7.2f} "
                      f"{best['zymase'] / best['jax hvps']:7.2f} {best['jax hessian'] / best['jax primal']:12.1f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
