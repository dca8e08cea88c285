"""Best-of-batches timing for the Python frameworks, the same procedure as bench_time() in
workloads/bench_common.h so that C, JAX and PyTorch times are comparable."""

from __future__ import annotations

import os
import time
from typing import Callable


def timing_budget() -> tuple[float, int]:
    """Seconds per batch and number of batches (BENCH_MIN_S, BENCH_REPEATS)."""
    return float(os.environ.get("BENCH_MIN_S") or 0.2), max(1, int(os.environ.get("BENCH_REPEATS") or 3))


def best_time(fn: Callable[[], object], min_s: float, repeats: int) -> float:
    """Per-call seconds of fn: one warm-up call, then `repeats` batches of calls lasting at
    least min_s each; the best batch wins. A call that alone outlasts the whole budget is
    timed once more after the warm-up call, and the faster of the two counts."""
    t0 = time.perf_counter()
    fn()
    once = time.perf_counter() - t0
    if once >= min_s * repeats:
        t0 = time.perf_counter()
        fn()
        return min(once, time.perf_counter() - t0)
    best = float("inf")
    for _ in range(repeats):
        calls = 0
        t0 = time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_s:
                break
        best = min(best, elapsed / calls)
    return best
