"""What both framework versions need from a workload's dump besides its arrays: sizes,
constants and index tables, computed once in numpy."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class Model:
    """A framework version of a workload: the objective over the differentiated arrays
    (``wrt``) and the constant ones (``const``), named as in the dump."""

    objective: Callable
    wrt: tuple[str, ...]
    const: tuple[str, ...]


def gmm_sizes(arrays: dict[str, np.ndarray]) -> tuple[int, int, int]:
    """(d, K, n) of a GMM dump."""
    k = arrays["alphas"].size
    d = arrays["means"].size // k
    return d, k, arrays["x"].size // d


def gmm_lower_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each strictly-lower entry of Q, in icf's order (column by column)."""
    rows, cols = [], []
    for j in range(d):
        for i in range(j + 1, d):
            rows.append(i)
            cols.append(j)
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)


def gmm_constant(d: int, k: int, n: int, gamma: float, m: int) -> float:
    """The parameter-free terms of the GMM objective: -n d/2 log(2 pi) - K C (Wishart prior
    normalization, C = N d (log gamma - log 2 / 2) - log Gamma_d(N/2), N = d + m + 1)."""
    nn = d + m + 1
    log_gamma_d = 0.25 * d * (d - 1) * math.log(math.pi) + sum(
        math.lgamma(0.5 * nn + 0.5 * (1 - j)) for j in range(1, d + 1)
    )
    c = nn * d * (math.log(gamma) - 0.5 * math.log(2.0)) - log_gamma_d
    return -n * d * 0.5 * math.log(2.0 * math.pi) - k * c


def lstm_sizes(arrays: dict[str, np.ndarray]) -> tuple[int, int, int]:
    """(layers, chars, b) of an LSTM dump."""
    b = arrays["extra_params"].size // 3
    return arrays["main_params"].size // (8 * b), arrays["sequence"].size // b, b


def hand_pose_indices() -> tuple[np.ndarray, np.ndarray]:
    """For each of the 26 entries of theta, its (column, row) in ADBench's 3 x (bones + 3)
    pose-parameter matrix: global rotation (column 0), translation (column 2), then per
    finger the second bone two angles and the third and fourth one each."""
    cols = [0, 0, 0, 2, 2, 2]
    rows = [0, 1, 2, 0, 1, 2]
    col = 5
    for _finger in range(5):
        for joint in (2, 3, 4):
            cols.append(col)
            rows.append(0)
            if joint == 2:
                cols.append(col)
                rows.append(1)
            col += 1
        col += 1
    return np.array(cols), np.array(rows)
