"""The same array passed as two arguments (session 25's hunt for silent wrong derivatives).

``f(x, x)`` where ``f`` writes through one argument and reads the other: before, ``grad``
gave each argument its own shadow and ``jvp``/``vjp``/the Jacobians ran ``f`` on a copy
of each, so the writes through one were not seen through the other: for
``y[i] = x[i] * y[i] + 1; return sum(y * x)`` at x = linspace(0.3, 1.2, 4), grad's two
partials summed to [1.744, 2.992, ...] against the true [1.308, 3.264, ...], and jvp
along ones gave 12.1 against 22.8 (hessian, hvp and jacfwd(grad(f)) took the two as
distinct arrays too). Such calls are refused now. A function that only
reads both (a kernel matrix ``k(X, X)``) keeps working: its partials are well defined.
"""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def scale_into(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * y[i] + 1.0
    return np.sum(y * x)


@njit
def reads_both(x, y):
    return np.sum(x * y * y)


X0 = np.linspace(0.3, 1.2, 4)


@pytest.mark.parametrize("entry", ["grad", "jvp", "vjp", "jacrev", "hessian"])
def test_writing_through_an_aliased_argument_is_refused(entry):
    x = X0.copy()
    calls = {
        "grad": lambda: zymase.grad(scale_into, argnums=(0, 1))(x, x),
        "jvp": lambda: zymase.jvp(scale_into, (x, x), (np.ones(4), np.ones(4))),
        "vjp": lambda: zymase.vjp(scale_into, x, x),
        "jacrev": lambda: zymase.jacrev(scale_into)(x, x),
        "hessian": lambda: zymase.hessian(scale_into)(x, x),
    }
    with pytest.raises(ZymaseError) as info:
        calls[entry]()
    msg = info.value.format()
    assert msg.startswith("zymase: error: ")
    assert "argument 0 ('x') and argument 1 ('y') share memory" in msg and "'scale_into'" in msg
    # the line of the write, y[i] = x[i] * y[i] + 1.0 (co_firstlineno is the decorator's)
    assert f"{__file__}:{scale_into.py_func.__code__.co_firstlineno + 3}" in msg
    # distinct arrays are differentiated as before
    if entry == "grad":
        gx, gy = zymase.grad(scale_into, argnums=(0, 1))(X0.copy(), X0.copy())
        np.testing.assert_allclose(gx, X0 * X0 + (X0 * X0 + 1), rtol=1e-12)
        np.testing.assert_allclose(gy, X0 * X0, rtol=1e-12)


def test_reading_an_aliased_argument_twice_is_right():
    x = X0.copy()
    gx, gy = zymase.grad(reads_both, argnums=(0, 1))(x, x)
    # the total derivative of sum(x**3) is the sum of the partials
    np.testing.assert_allclose(gx + gy, 3 * X0 * X0, rtol=1e-12)
    np.testing.assert_allclose(gx, X0 * X0, rtol=1e-12)
    _, d = zymase.jvp(reads_both, (x, x), (np.ones(4), np.ones(4)))
    np.testing.assert_allclose(d, np.sum(3 * X0 * X0), rtol=1e-12)


_grad_both = zymase.grad(scale_into, argnums=(0, 1))


@njit
def _calls_grad(x, y):
    gx, gy = _grad_both(x, y)
    return np.sum(gx) + np.sum(gy)


def test_njit_code_calling_grad_with_one_array_twice():
    # the glue raises the same ZymaseError (its one argument: the message and hint)
    with pytest.raises(ZymaseError, match=r"^zymase: error: .*argument 0 \('x'\) and argument 1 \('y'\) share memory"):
        x = X0.copy()
        _calls_grad(x, x)
    # distinct arrays, and views of one array that do not overlap, are differentiated
    a = np.concatenate([X0, X0])
    want = np.sum(X0 * X0 + (X0 * X0 + 1)) + np.sum(X0 * X0)
    assert _calls_grad(X0.copy(), X0.copy()) == pytest.approx(want, rel=1e-12)
    assert _calls_grad(a[:4], a[4:]) == pytest.approx(want, rel=1e-12)
