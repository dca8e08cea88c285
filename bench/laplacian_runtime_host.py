#!/usr/bin/env python
"""The one-layer MLP's Laplacian (bench/second_order_structure.py's ``mlp1``) with
zymase's linear-algebra runtime compiled for generic x86-64 and for the host CPU
(``frontends/numba.RUNTIME_FOR_HOST``), side by side in one process: CPU time per call,
best of alternating rounds of 2000 calls. ``python bench/laplacian_runtime_host.py
[rounds]`` (pin it: ``OPENBLAS_NUM_THREADS=1 taskset -c 1``)."""

import os
import sys
import time

import numpy as np
from numba import njit

import zymase
from zymase.frontends import numba as zn


def mlp1(x, W1, b1, w):
    return np.dot(w, np.tanh(W1 @ x + b1))


def main(rounds: int, width: int = 256, calls: int = 2000) -> None:
    laps = {}
    for host in (False, True):
        zn.RUNTIME_FOR_HOST = host  # read when the kernel is built (its first call)
        laps[host] = zymase.laplacian(njit(mlp1))
    for d in (16, 64):
        rng = np.random.default_rng(d)
        args = (rng.standard_normal(d), rng.standard_normal((width, d)) / np.sqrt(d), rng.standard_normal(width),
                rng.standard_normal(width) / 16)
        values = {}
        for host in (False, True):
            zn.RUNTIME_FOR_HOST = host
            values[host] = laps[host](*args)  # built here
        best = {False: float("inf"), True: float("inf")}
        for _ in range(rounds):
            for host in (False, True):
                t = time.process_time()
                for _ in range(calls):
                    laps[host](*args)
                best[host] = min(best[host], (time.process_time() - t) / calls * 1e6)
        print(f"d={d} width={width}: generic {best[False]:.1f} us, host {best[True]:.1f} us, "
              f"host/generic {best[True] / best[False]:.3f}; values {values[False]!r} {values[True]!r}; "
              f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
