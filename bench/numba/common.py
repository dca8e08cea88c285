"""Shared pieces of the Numba benchmarks: timing, finite-difference checks, gradient
comparison. No JAX imports here, so the tests can use it without JAX."""

from __future__ import annotations

import numpy as np

# the timing procedure of `zymase bench` (one warm-up call, best of `repeats` batches)
from zymase.bench.timing import best_time

__all__ = ["best_time", "as_tuple", "fd_entry", "fd_indices", "fd_check", "max_rel_diff"]


def as_tuple(grads, argnums) -> tuple:
    """zymase/JAX return a bare gradient for an int argnums, a tuple for a tuple."""
    return tuple(grads) if isinstance(argnums, tuple) else (grads,)


def _moved(args, i, k, h):
    """args with entry k of argument i moved by h (argument i: float or array)."""
    out = list(args)
    v = args[i]
    if isinstance(v, np.ndarray):
        w = v.copy()
        w.flat[k] += h
        out[i] = w
    else:
        out[i] = float(v) + h
    return out


def fd_entry(f, args, i, k) -> float:
    """d f / d args[i].flat[k] by the fourth-order central difference
    (-f(x+2h) + 8 f(x+h) - 8 f(x-h) + f(x-2h)) / 12h: truncation error O(h^4), so h can be
    large enough that rounding (eps |f| / h) stays small even for the large GMM sums. The
    step follows |x| (KPP's D = 0.05 would move by 2% with a fixed 1e-3) down to a floor
    of 1e-4, so entries at or near zero still get a usable step."""
    v = args[i]
    x = float(v.flat[k]) if isinstance(v, np.ndarray) else float(v)
    h = 1e-3 * max(abs(x), 0.1)
    fs = [float(f(*_moved(args, i, k, s * h))) for s in (2, 1, -1, -2)]
    return (-fs[0] + 8 * fs[1] - 8 * fs[2] + fs[3]) / (12 * h)


def fd_indices(g, count: int = 4) -> list[int]:
    """A few entries to check: first, middle, last and the largest in magnitude."""
    if not isinstance(g, np.ndarray):
        return [0]
    flat = np.abs(np.ravel(g))
    picks = [0, flat.size // 2, flat.size - 1, int(np.argmax(flat))]
    return list(dict.fromkeys(picks))[:count]


def fd_check(f, args, argnums, argnames, grads, rtol: float = 1e-5) -> list[dict]:
    """Compare a few gradient entries with finite differences. An entry's error is relative
    to max(|entry|, 1e-3 max|gradient of that argument|), so near-zero entries are judged
    on the scale of their argument's gradient instead of on their own tiny size."""
    rows = []
    for i, name, g in zip(argnums, argnames, grads):
        scale = float(np.max(np.abs(g))) if isinstance(g, np.ndarray) else abs(float(g))
        for k in fd_indices(g):
            ad = float(np.ravel(g)[k]) if isinstance(g, np.ndarray) else float(g)
            fd = fd_entry(f, args, i, k)
            err = abs(ad - fd) / max(abs(ad), 1e-3 * scale, 1e-300)
            rows.append({"arg": name, "index": k, "ad": ad, "fd": fd, "rel_err": err, "ok": bool(err <= rtol)})
    return rows


def max_rel_diff(a_grads, b_grads) -> float:
    """max over arguments of max|a - b| / max|b| (normwise per argument, so entries that
    are near zero do not blow the measure up)."""
    worst = 0.0
    for a, b in zip(a_grads, b_grads):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return float("inf")
        denom = float(np.max(np.abs(b))) if b.size else 0.0
        diff = float(np.max(np.abs(a - b))) if b.size else 0.0
        worst = max(worst, diff / denom if denom > 0 else diff)
    return worst
