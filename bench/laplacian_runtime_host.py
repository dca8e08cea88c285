#!/usr/bin/env python
"""Laplacian of the one-layer MLP with zymase's linalg runtime compiled for generic x86-64
and for the host CPU, side by side in one process (CPU time, best of alternating rounds)."""
import sys, time, os
import numpy as np
from numba import njit
import zymase
from zymase.frontends import numba as zn

def mlp1(x, W1, b1, w):
    return np.dot(w, np.tanh(W1 @ x + b1))

laps = {}
for host in (False, True):
    zn.RUNTIME_FOR_HOST = host
    f = njit(mlp1)
    laps[host] = zymase.laplacian(f)
width = 256
for d in (16, 64):
    rng = np.random.default_rng(d)
    x = rng.standard_normal(d); W = rng.standard_normal((width, d)) / np.sqrt(d); b = rng.standard_normal(width); w = rng.standard_normal(width) / 16
    for host in (False, True):
        zn.RUNTIME_FOR_HOST = host
        laps[host](x, W, b, w)  # compile
    vals = {h: laps[h](x, W, b, w) for h in laps}
    best = {False: 1e9, True: 1e9}
    for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 7):
        for host in (False, True):
            n = 2000
            t = time.process_time()
            for _ in range(n):
                laps[host](x, W, b, w)
            best[host] = min(best[host], (time.process_time() - t) / n * 1e6)
    print(f"d={d} width={width}: generic {best[False]:.1f} us, host {best[True]:.1f} us, host/generic {best[True]/best[False]:.3f}; values {vals[False]!r} {vals[True]!r}; load {os.getloadavg()[0]:.1f}")
