"""How far two tools' gradients are apart.

The difference of two gradient sets is the largest, over arrays, of
max_i |a_i - b_i| / max(max_i |a_i|, max_i |b_i|): relative to each array's largest entry,
so that entries near zero (where any rounding is a large relative error) do not dominate.
"""

from __future__ import annotations

import itertools

import numpy as np

#: gradients further apart than this are reported as a mismatch (all tools compute in float64)
GRADIENT_TOLERANCE = 1e-6


def array_difference(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    scale = max(np.max(np.abs(a), initial=0.0), np.max(np.abs(b), initial=0.0))
    if scale == 0.0:
        return 0.0
    return float(np.max(np.abs(a - b)) / scale)


def gradient_difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    """Largest array_difference over the arrays both sets should have (a missing one counts
    as infinitely different)."""
    names = set(a) | set(b)
    worst = 0.0
    for name in names:
        if name not in a or name not in b:
            return float("inf")
        worst = max(worst, array_difference(a[name], b[name]))
    return worst


def pairwise_differences(gradients: dict[str, dict[str, np.ndarray]]) -> dict[str, float]:
    """Difference of every pair of tools, keyed "tool1 vs tool2" (in the given order)."""
    return {
        f"{x} vs {y}": gradient_difference(gradients[x], gradients[y])
        for x, y in itertools.combinations(gradients, 2)
    }


def relative_difference(x: float, y: float) -> float:
    """|x - y| / max(|x|, |y|) for two objective values."""
    scale = max(abs(x), abs(y))
    if not (np.isfinite(x) and np.isfinite(y)):
        return float("inf")
    return 0.0 if scale == 0.0 else abs(x - y) / scale
