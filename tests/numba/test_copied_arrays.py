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
from zymase.errors import ZymaseError
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


@njit
def copy_of_partly_filled(x):
    y = np.empty(5)
    y[0] = x[0]
    y[1] = x[1] * 2.0
    z = y.copy()  # elements 2..4 of y are never written: the copy may move anything
    return z[0] * z[1]


def test_copy_of_unknown_elements_refused_in_python_terms():
    """Copying an array whose unwritten elements could be anything is refused, naming the
    copy, its line and NumPy's type names, not LLVM's memcpy and C's remedies."""
    with pytest.raises(ZymaseError) as info:
        zymase.grad(copy_of_partly_filled)(np.linspace(0.3, 1.4, 7))
    text = info.value.format()
    line = copy_of_partly_filled.py_func.__code__.co_firstlineno + 5  # the decorator's line
    assert text.startswith("zymase: error: ") and "\n" not in text
    assert f"test_copied_arrays.py:{line}:" in text and ".copy() (line" in text, text
    assert "float64" in text and "np.zeros instead of np.empty" in text, text
    for c_term in ("memcpy", "double", "C cast", "-O1", "-g"):
        assert c_term not in text, (c_term, text)
