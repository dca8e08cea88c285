"""``zymase.jvp`` written inside njit code (issue 25 item 3, session 24 item 2): a float
result and an array result against closed forms, and composed: ``grad`` of njit code
that calls ``jvp`` (reverse over forward), ``jvp`` and ``jacfwd`` of it (forward over
forward); ``jvp`` inside njit code and from Python share one kernel;
``vjp`` inside njit code and a wrong tangent are refused by name. One njit function
calls both kinds of ``jvp``, so its kernels serve every check (each compile costs
seconds)."""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn


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


def test_jvp_inside_njit_code_and_from_python_share_one_kernel():
    # session 25 item 3: inside njit code jvp gave a None tangent's argument no tangent
    # where jvp from Python passes zeros: two kernels of wave's output writer for one call
    directional(X, V, C)  # compiles the njit jvp's kernels (if no test did yet)
    compiled = len(zn.stats())
    value, tangent = zymase.jvp(wave, (X, C), (V, None))
    e, de = zymase.jvp(energy, (X, C), (V, 1.0))  # the float result's kernel too
    assert len(zn.stats()) == compiled, [r.summary() for r in zn.stats()[compiled:]]
    assert de == pytest.approx(C * np.sum((np.cos(X) - X * np.sin(X)) * V) + e / C, rel=1e-13)

    @njit
    def inside(x, v, c):
        return zymase.jvp(wave, (x, c), (v, None))

    got_value, got_tangent = inside(X, V, C)
    np.testing.assert_array_equal(got_value, value)
    np.testing.assert_array_equal(got_tangent, tangent)
    np.testing.assert_allclose(tangent, (C * np.cos(X) + 2 * X) * V, rtol=1e-14)


def test_jacfwd_of_njit_code_calling_jvp():
    # vector forward mode over njit code calling jvp (forward over forward, one lane per
    # input element), against central differences and the closed-form gradient
    jx, jv = zymase.jacfwd(directional, argnums=(0, 1))(X, V, C)
    np.testing.assert_allclose(jx, _closed(X, V, C)[1], rtol=1e-12)
    h = 1e-6
    for got, at in ((jx, 0), (jv, 1)):
        def moved(d, at=at):
            args = [X, V, C]
            args[at] = args[at] + d
            return directional(*args)

        fd = np.array([(moved(h * e) - moved(-h * e)) / (2 * h) for e in np.eye(3)])
        np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-7)


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


def test_jvp_without_tangents_inside_njit_code_is_refused_by_name():
    # session 26 left this to Numba: its binding error named the overload, not the call
    @njit
    def no_tangents(x):
        return zymase.jvp(energy, (x, 2.0))

    with pytest.raises(ZymaseError, match=r"takes three arguments \(f, primals, tangents\); the tangents of 'energy' "
                       "are missing") as err:
        no_tangents(X)
    assert "in function 'no_tangents'" in err.value.format()
