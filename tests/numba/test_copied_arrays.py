"""A copy of a whole array argument (``x.copy()``, a memcpy of all its bytes) of which f
reads only some elements: type analysis knows the unread elements' type from Numba's
argument type (``zymase-arg-elements`` on the kernel's status function), not from the
accesses alone, which left bytes unknown and refused the copy (njit fuzz seed 5001).
Checked against central differences in both modes, in both float precisions."""

import math

import numpy as np
import pytest

import zymase
from numba import njit
from njit_fd import assert_close, fd_directional, fd_grad


@njit
def partial_copy(x):
    y = x.copy()  # element 3 (and 5, 6) neither read nor written in f
    return y[1] * x[0] + math.sin(y[2]) + x[4] * y[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_partial_copy_grad_and_jvp(dtype):
    x = np.linspace(0.3, 1.4, 7).astype(dtype)
    rtol = 1e-6 if dtype == np.float64 else 2e-2
    got = zymase.grad(partial_copy)(x.copy())
    assert got.dtype == dtype
    assert_close(got, fd_grad(partial_copy.py_func, (x,), 0), rtol, what="grad")
    t = np.linspace(-1.0, 1.0, 7).astype(dtype)
    _, tangent = zymase.jvp(partial_copy, (x.copy(),), (t,))
    assert_close(tangent, fd_directional(partial_copy.py_func, (x,), (t,)), rtol, what="jvp")
