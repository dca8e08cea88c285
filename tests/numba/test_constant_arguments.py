"""Arguments Numba accepts and zymase holds constant: NumPy records and omitted
defaulted parameters.

Guards issue 23 item 2: a record (structured dtype) argument was refused even when
not differentiated, and a call leaving out a defaulted trailing argument (which Numba
accepts) was refused by every entry point. Derivatives are checked against closed
forms.
"""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase import Active, Const, Duplicated
from zymase.errors import ZymaseError

PARAMS = np.dtype([("w", np.float64), ("n", np.int64), ("b", np.float32)])
X = np.linspace(0.2, 1.0, 4)


def _params(w, n, b):
    r = np.zeros(1, PARAMS)[0]
    r["w"], r["n"], r["b"] = w, n, b
    return r


@njit
def record_loss(x, p):
    return p["w"] * np.sum(x * x) + p["n"] * x[0] + p["b"]


@njit
def records_loss(x, ps):
    s = 0.0
    for i in range(ps.shape[0]):
        s += ps[i]["w"] * x[i] * x[i]
    return s


def test_record_scalar_is_a_constant():
    p = _params(3.0, 2, 0.5)
    want = 6.0 * X + np.array([2.0, 0, 0, 0])
    np.testing.assert_allclose(zymase.grad(record_loss)(X.copy(), p), want, rtol=1e-12)
    v, g = zymase.value_and_grad(record_loss)(X.copy(), p)
    assert v == pytest.approx(3.0 * np.sum(X * X) + 2 * X[0] + 0.5)
    dx = np.zeros_like(X)
    zymase.autodiff(record_loss, Duplicated(X.copy(), dx), Const(p))
    np.testing.assert_allclose(dx, want, rtol=1e-12)
    t = np.linspace(1.0, 2.0, 4)
    assert zymase.jvp(record_loss, (X, p), (t, None))[1] == pytest.approx(want @ t)
    assert zymase.fwddiff(record_loss, Duplicated(X.copy(), t), Const(p)) == pytest.approx(want @ t)
    gx, gp = zymase.vjp(record_loss, X, p)[1](1.0)
    np.testing.assert_allclose(gx, want, rtol=1e-12)
    assert gp is None


def test_record_array_is_a_constant():
    ps = np.zeros(4, PARAMS)
    ps["w"] = [1.0, 2.0, 3.0, 4.0]
    want = 2 * ps["w"] * X
    np.testing.assert_allclose(zymase.grad(records_loss)(X.copy(), ps), want, rtol=1e-12)
    dx = np.zeros_like(X)
    zymase.autodiff(records_loss, Duplicated(X.copy(), dx), Const(ps))
    np.testing.assert_allclose(dx, want, rtol=1e-12)


def test_differentiating_a_record_is_a_clear_error():
    with pytest.raises(ZymaseError, match="'p'"):
        zymase.grad(record_loss, argnums=1)(X.copy(), _params(3.0, 2, 0.5))
    with pytest.raises(ZymaseError, match="'ps'"):
        zymase.grad(records_loss, argnums=1)(X.copy(), np.zeros(4, PARAMS))
    with pytest.raises(ZymaseError, match="'p'"):
        zymase.jvp(record_loss, (X, _params(3.0, 2, 0.5)), (np.ones(4), 1.0))


@njit
def scaled(x, a=2.0, n=3):
    return a * n * np.sum(x * x)


def test_omitted_defaults_are_constants():
    want = 12.0 * X
    np.testing.assert_allclose(zymase.grad(scaled)(X.copy()), want, rtol=1e-12)
    np.testing.assert_allclose(zymase.grad(scaled)(X.copy(), 2.0), want, rtol=1e-12)
    np.testing.assert_allclose(zymase.grad(scaled)(X.copy(), 1.0, 1), 2 * X, rtol=1e-12)
    assert zymase.grad(scaled, argnums=1)(X.copy()) == pytest.approx(3 * np.sum(X * X))
    v, g = zymase.value_and_grad(scaled)(X.copy())
    assert v == pytest.approx(6 * np.sum(X * X))
    dx = np.zeros_like(X)
    zymase.autodiff(scaled, Duplicated(X.copy(), dx))
    np.testing.assert_allclose(dx, want, rtol=1e-12)
    assert zymase.autodiff(scaled, Const(X.copy()), Active(2.0)) == (None, pytest.approx(3 * np.sum(X * X)))
    t = np.ones_like(X)
    assert zymase.jvp(scaled, (X,), (t,))[1] == pytest.approx(np.sum(want))
    assert zymase.fwddiff(scaled, Duplicated(X.copy(), t)) == pytest.approx(np.sum(want))
    (gx,) = zymase.vjp(scaled, X)[1](1.0)
    np.testing.assert_allclose(gx, want, rtol=1e-12)


def test_omitted_default_from_njit_code():
    g = zymase.grad(scaled)

    @njit
    def step(x):
        return x - 0.1 * g(x)

    np.testing.assert_allclose(step(X.copy()), X - 1.2 * X, rtol=1e-12)


def test_required_argument_still_missing():
    with pytest.raises(ZymaseError, match="'x' is missing"):
        zymase.grad(scaled)()
