"""``zymase.jvp`` written inside njit code (issue 25 item 3, session 24 item 2): a float
result and an array result against closed forms, and composed: ``grad`` of njit code
that calls ``jvp`` (reverse over forward) and ``jvp`` of it (forward over forward);
``vjp`` inside njit code and a wrong tangent are refused by name. One njit function
calls both kinds of ``jvp``, so its kernels serve every check (each compile costs
seconds)."""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def wave(x, c):  # an array result with a temporary: jvp goes through the output writer
    return np.sin(x) * c + x * x


@njit
def energy(x, c):  # a float result: jvp differentiates it directly
    return np.sum(np.cos(x) * x) * c


@njit
def directional(x, v, c):
    y, dy = zymase.jvp(wave, (x, c), (v, None))
    e, de = zymase.jvp(energy, (x, c), (v, 1.0))
    return np.sum(y * dy) + e * de


X = np.array([0.4, -0.9, 1.3])
V = np.array([1.0, 0.5, -2.0])
W = np.array([0.3, -0.1, 0.7])
C = 1.7


def _closed(x, v, c):
    """directional's value and its gradient with respect to x, closed form."""
    y, dy = np.sin(x) * c + x * x, (c * np.cos(x) + 2 * x) * v
    dy_dx = (2 - c * np.sin(x)) * v  # d(dy)/dx, elementwise
    e = np.sum(np.cos(x) * x) * c
    de = c * np.sum((np.cos(x) - x * np.sin(x)) * v) + np.sum(np.cos(x) * x)
    e_x = c * (np.cos(x) - x * np.sin(x))
    de_x = c * (-2 * np.sin(x) - x * np.cos(x)) * v + np.cos(x) - x * np.sin(x)
    value = np.sum(y * dy) + e * de
    grad = (c * np.cos(x) + 2 * x) * dy + y * dy_dx + e_x * de + e * de_x
    return value, grad


@pytest.fixture(scope="module")
def d_directional():
    return zymase.grad(directional)


def test_jvp_called_inside_njit_code():
    # it was Numba's "Unknown attribute 'jvp'" typing error
    value, _ = _closed(X, V, C)
    assert directional(X, V, C) == pytest.approx(value, rel=1e-13)


def test_grad_of_njit_code_calling_jvp(d_directional):
    # reverse over forward: the forward kernels' sources are linked into directional's
    np.testing.assert_allclose(d_directional(X, V, C), _closed(X, V, C)[1], rtol=1e-12)


def test_jvp_of_njit_code_calling_jvp():
    # forward over forward, against the closed-form gradient along W
    value, tangent = zymase.jvp(directional, (X, V, C), (W, None, None))
    want_value, grad = _closed(X, V, C)
    assert value == pytest.approx(want_value, rel=1e-13)
    assert tangent == pytest.approx(grad @ W, rel=1e-12)


def test_vjp_and_wrong_tangents_inside_njit_code_are_refused():
    @njit
    def pulled(x):
        y, pullback = zymase.vjp(energy, x, 2.0)
        return y

    with pytest.raises(ZymaseError, match=r"vjp of 'energy' is called inside njit code.*zymase.grad"):
        pulled(X)

    @njit
    def scalar_tangent(x):
        return zymase.jvp(energy, (x, 2.0), (1.0, None))

    with pytest.raises(ZymaseError, match=r"tangent of argument 0 \('x'\) has type float64.*real array") as err:
        scalar_tangent(X)
    # the error names the njit function that calls jvp, and the line of the call
    line = scalar_tangent.py_func.__code__.co_firstlineno + 2
    assert f"{__file__}:{line}:" in err.value.format() and "in function 'scalar_tangent'" in err.value.format()

    @njit
    def short_tangent(x, v):
        return zymase.jvp(energy, (x, 2.0), (v, None))

    with pytest.raises(ZymaseError, match="differs in shape"):
        short_tangent(X, V[:2])
