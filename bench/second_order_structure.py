#!/usr/bin/env python3
"""What structure-aware second order costs (issue 25's performance items), as ratios of
times measured in one process, the calls alternating round by round (best of each).

Laplacian of an MLP:

- ``zymase.laplacian(f)(x, ...)`` (the collapsed forward Laplacian: one Laplacian-mode
  call carrying d gradient lanes and one Laplacian lane, gemv's lanes as one gemm)
  against the njit primal ``f(x, ...)``;
- against JAX's ``jnp.trace(jax.hessian(f)(x))`` and a JAX loop of n forward-over-reverse
  Hessian-vector products (``lax.fori_loop`` of ``jvp(grad(f))`` summing ``e_i . H e_i``),
  both jitted, and JAX's jitted primal.

f is a tanh MLP with one or two hidden layers of the given width, written as a NumPy user
writes it (``np.tanh(W @ x + b)``), input size d. The Laplacians are checked equal first.
For two layers a reference is timed beside them, the floor of any forward Laplacian: the
second layer's ``W2 @ G`` (width x width times width x d, the gradient lanes of its
input), one OpenBLAS dgemm through NumPy (``gemm ref``; ``ref/prim`` is that floor in
units of the primal, so 10x the primal is out of reach where it nears 10).

Sparse Hessian of a banded function (a chained Rosenbrock, tridiagonal):
``hessian(f, sparse=True)`` at n = 10^4 (the colour count is the number of
Hessian-vector products) against n separate ``hvp`` calls and, at a smaller n where the
dense matrix fits, against the dense ``hessian(f)``; the first call (the sparsity
analysis of the IR, then cached: the function's path does not depend on values) is
reported apart.

The process is confined to one CPU (XLA's threads would otherwise take the second core),
compile time is excluded. ``--clock cpu`` times the process's CPU time (every thread's,
XLA's included) instead of wall time: on a shared, loaded machine wall times include the
waits for the CPU, CPU times much less so.

    python bench/second_order_structure.py [--dims 16 32 64] [--widths 256 1024] [--rounds 5]
        [--sparse-n 10000] [--dense-n 1000] [--skip-mlp] [--skip-sparse] [--clock wall|cpu]
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


@njit
def chained_rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        d = x[i + 1] - x[i] * x[i]
        e = 1.0 - x[i]
        s += 100.0 * d * d + e * e
    return s


#: the clock calls are timed with (``--clock``)
CLOCK = time.perf_counter


def _time(call, min_seconds: float = 0.05) -> float:
    """Seconds per call: repeat until ``min_seconds`` have passed."""
    reps = 1
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
    p.add_argument("--sparse-n", type=int, default=10_000)
    p.add_argument("--dense-n", type=int, default=1000)
    p.add_argument("--skip-mlp", action="store_true")
    p.add_argument("--skip-sparse", action="store_true")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ns = p.parse_args()
    global CLOCK
    CLOCK = time.process_time if ns.clock == "cpu" else time.perf_counter
    if not ns.skip_mlp:
        mlp_laplacians(ns)
    if not ns.skip_sparse:
        sparse_hessians(ns)
    return 0


def sparse_hessians(ns) -> None:
    from zymase import api_sparse

    f = chained_rosenbrock
    sh, dh, hv = zymase.hessian(f, sparse=True), zymase.hessian(f), zymase.hvp(f)
    for n in (ns.dense_n, ns.sparse_n):
        rng = np.random.default_rng(n)
        x = rng.uniform(-1, 1, n)
        api_sparse._patterns.clear()
        t0 = time.perf_counter()
        h = sh(x)
        first = time.perf_counter() - t0
        colours = api_sparse.last["colours"]
        basis = np.eye(n) if n <= ns.dense_n else None

        def n_hvps():
            e = np.zeros(n)
            for i in range(n):
                e[i] = 1.0
                hv(x, e)
                e[i] = 0.0

        calls = {"primal": lambda: f(x), "sparse": lambda: sh(x), "n hvps": n_hvps}
        if basis is not None:
            np.testing.assert_allclose(h.toarray(), dh(x), rtol=1e-12, atol=1e-12)
            calls["dense"] = lambda: dh(x)
        best = _race(calls, max(2, ns.rounds // 2))
        print(f"sparse Hessian, chained Rosenbrock, n = {n}: {colours} colours, {h.nnz} nonzeros; first call "
              f"(analysis included) {first * 1e3:.1f} ms")
        for k, t in best.items():
            print(f"  {k:7s} {t * 1e3:10.2f} ms")
        line = f"  sparse / n hvps = {best['sparse'] / best['n hvps']:.4f}   sparse / primal = " \
               f"{best['sparse'] / best['primal']:.0f}"
        if "dense" in best:
            line += f"   sparse / dense = {best['sparse'] / best['dense']:.4f}"
        print(line, flush=True)


def mlp_laplacians(ns) -> None:
    print(f"one CPU ({os.sched_getaffinity(0)}), best of {ns.rounds} alternating rounds; {ns.clock} times in us; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'layers':>6} {'d':>4} {'width':>5} {'primal':>9} {'zymase':>10} {'jax hess':>10} {'jax hvps':>10}"
          f" {'jax prim':>9} | {'zy/prim':>7} {'zy/jaxH':>7} {'zy/jaxV':>7} {'jaxH/jaxprim':>12} | first call (CPU s)"
          f" | {'gemm ref':>9} {'ref/prim':>8} {'zy/ref':>6}")
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
                c0 = time.process_time()
                got = lap(x, *params)  # the first call at these shapes compiles (per layers and d)
                first = time.process_time() - c0
                np.testing.assert_allclose(got, want, rtol=1e-9)
                np.testing.assert_allclose(float(jhvps(jx, *jp)), want, rtol=1e-9)
                calls = {
                    "primal": lambda: f(x, *params),
                    "zymase": lambda: lap(x, *params),
                    "jax hessian": lambda: jhess(jx, *jp).block_until_ready(),
                    "jax hvps": lambda: jhvps(jx, *jp).block_until_ready(),
                    "jax primal": lambda: jprim(jx, *jp).block_until_ready(),
                }
                if layers == 2:  # the reference: W2 times the d gradient lanes of its input
                    W2, G = params[2], rng.standard_normal((width, d))
                    calls["gemm ref"] = lambda: W2 @ G
                best = _race(calls, ns.rounds)
                us = {k: v * 1e6 for k, v in best.items()}
                ref = (f"{us['gemm ref']:9.1f} {best['gemm ref'] / best['primal']:8.1f} "
                       f"{best['zymase'] / best['gemm ref']:6.2f}") if "gemm ref" in us else ""
                print(f"{layers:>6} {d:>4} {width:>5} {us['primal']:9.1f} {us['zymase']:10.1f} "
                      f"{us['jax hessian']:10.1f} {us['jax hvps']:10.1f} {us['jax primal']:9.1f} | "
                      f"{best['zymase'] / best['primal']:7.1f} {best['zymase'] / best['jax hessian']:7.2f} "
                      f"{best['zymase'] / best['jax hvps']:7.2f} {best['jax hessian'] / best['jax primal']:12.1f} | {first:6.2f} | {ref}",
                      flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
