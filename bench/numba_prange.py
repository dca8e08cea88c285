#!/usr/bin/env python3
"""Numba ``prange`` loops (issue 27 item 2): the gradient of ``@njit(parallel=True)``
functions against their primal at 1 and 2 Numba threads, and against the serial
derivative zymase built before prange loops were forked (the same function compiled
without ``parallel=True``, where ``prange`` is ``range``). All variants run alternately,
round after round, on the same inputs (the gradients are checked equal first); the
report gives the best time of each and the ratios.

    python bench/numba_prange.py [--rounds R] [--n N] [--only map reduction stencil rows loops outarg]

Workloads: a map (``out[i] = f(x[i])``, then a weighted sum), a reduction inside
``prange``, a 3-point stencil (adjoints of neighbouring iterations meet: atomic adds),
a 2-D loop (``prange`` over rows, an inner loop over columns) and a function with three
prange loops (a map, a stencil reading it, a reduction), and a map writing into an argument
array (``outarg``: ``out`` passed in, session 26; before, the serial derivative, as ``x`` and
``out`` might have aliased). Each time is wall clock and process CPU time. The machine these
numbers come from is shared: read ratios measured side by side, not single timings.
"""

from __future__ import annotations

import argparse
import math
import time

import numba
import numpy as np
from numba import njit, prange

import zymase


def _map(x, w):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = math.sin(x[i]) * x[i] + math.exp(-0.5 * x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * out[i]
    return s


def _reduction(x, w):
    s = 0.0
    for i in prange(x.shape[0]):
        s += math.tanh(x[i]) * x[i] + 0.5 * w[i] * x[i] * x[i]
    return s


def _stencil(x, w):
    n = x.shape[0]
    out = np.zeros(n)
    for i in prange(1, n - 1):
        out[i] = x[i] + 0.2 * (x[i - 1] - 2.0 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i] * x[i + 1]
    s = 0.0
    for i in range(n):
        s += w[i] * out[i]
    return s


def _rows(a, w):
    m, k = a.shape
    out = np.empty(m)
    for i in prange(m):
        acc = 0.0
        for j in range(k):
            acc += math.sin(a[i, j]) * w[j] + a[i, j] * a[i, j]
        out[i] = acc * acc
    s = 0.0
    for i in range(m):
        s += out[i]
    return s


def _loops(x, w):
    # several prange loops in one function: a map, a stencil reading it, a reduction
    n = x.shape[0]
    a = np.empty(n)
    for i in prange(n):
        a[i] = math.sin(x[i]) * x[i]
    b = np.empty(n)
    for i in prange(1, n - 1):
        b[i] = a[i - 1] * a[i + 1]
    s = 0.0
    for i in prange(1, n - 1):
        s += b[i] * w[i]
    for i in range(n):
        s += a[i]
    return s


def _outarg(x, w, out):
    # the map of _map writing into an argument array
    for i in prange(x.shape[0]):
        out[i] = math.sin(x[i]) * x[i] + math.exp(-0.5 * x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * out[i]
    return s


WORKLOADS = {"map": _map, "reduction": _reduction, "stencil": _stencil, "rows": _rows, "loops": _loops,
             "outarg": _outarg}


def _inputs(name: str, n: int):
    if name == "rows":
        m, k = n // 100, 100
        return np.cos(0.3 * np.arange(m * k)).reshape(m, k) * 0.5, np.cos(0.11 * np.arange(k))
    x, w = 0.3 + 0.5 * np.sin(0.37 * np.arange(n)), np.cos(0.11 * np.arange(n))
    return (x, w, np.empty(n)) if name == "outarg" else (x, w)


def _best(f, args, rounds_done: dict, key: str):
    t0, c0 = time.perf_counter(), time.process_time()
    f(*args)
    rounds_done.setdefault(key, []).append(time.perf_counter() - t0)
    rounds_done.setdefault("cpu " + key, []).append(time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=2_000_000)
    ap.add_argument("--only", nargs="*", default=list(WORKLOADS))
    opts = ap.parse_args()
    threads = [t for t in (1, 2) if t <= numba.config.NUMBA_NUM_THREADS]
    print(f"threads {threads}, n = {opts.n}, {opts.rounds} alternating rounds; minima")
    for name in opts.only:
        py = WORKLOADS[name]
        parallel = njit(parallel=True)(py)
        serial = njit(py)  # prange is range without parallel=True: the serial derivative
        args = _inputs(name, opts.n)
        g_par = zymase.grad(parallel)
        g_ser = zymase.grad(serial)
        parallel(*args)
        got = g_par(*args)
        forked = getattr(zymase.stats()[-1], "parfors", "?")  # the record of g_par's kernel
        ref = g_ser(*args)
        assert np.allclose(got, ref, rtol=1e-10, atol=1e-12), name
        times: dict = {}
        for _ in range(opts.rounds):
            for t in threads:
                numba.set_num_threads(t)
                _best(parallel, args, times, f"primal {t}")
                _best(g_par, args, times, f"grad {t}")
                _best(g_ser, args, times, f"serial grad {t}")
        best = {k: min(v) for k, v in times.items()}
        print(f"\n{name} (gradient's prange loops: {forked}; threading layer {numba.threading_layer()})")
        for t in threads:
            print(f"  {t} thread(s): primal {best[f'primal {t}'] * 1e3:8.2f} ms  gradient "
                  f"{best[f'grad {t}'] * 1e3:8.2f} ms  ratio {best[f'grad {t}'] / best[f'primal {t}']:5.2f}   "
                  f"serial derivative {best[f'serial grad {t}'] * 1e3:8.2f} ms")
            print(f"      CPU time: primal {best[f'cpu primal {t}'] * 1e3:8.2f} ms  gradient "
                  f"{best[f'cpu grad {t}'] * 1e3:8.2f} ms  ratio "
                  f"{best[f'cpu grad {t}'] / best[f'cpu primal {t}']:5.2f}   serial derivative "
                  f"{best[f'cpu serial grad {t}'] * 1e3:8.2f} ms")
        if len(threads) == 2:
            print(f"  gradient 2 threads / 1 thread: {best['grad 2'] / best['grad 1']:.2f}   "
                  f"primal 2 / 1: {best['primal 2'] / best['primal 1']:.2f}")


if __name__ == "__main__":
    main()
