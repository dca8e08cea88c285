"""Gradients called from njit code, with no Python round trip."""

import math

import numpy as np
import pytest
from numba import njit

import zymase


@njit
def rosen(p):
    s = 0.0
    for i in range(p.shape[0] - 1):
        s += 100.0 * (p[i + 1] - p[i] ** 2) ** 2 + (1 - p[i]) ** 2
    return s


rosen_grad = zymase.grad(rosen)
rosen_vg = zymase.value_and_grad(rosen)


@njit
def descent(p, lr, steps):
    for _ in range(steps):
        g = rosen_grad(p)
        for i in range(p.shape[0]):
            p[i] -= lr * g[i]
    return p


def test_gradient_descent_in_njit_matches_python_loop():
    p0 = np.array([-0.5, 0.8, 0.3, 1.2])
    inside = descent(p0.copy(), 1e-4, 50)
    p = p0.copy()
    for _ in range(50):
        p -= 1e-4 * rosen_grad(p)
    np.testing.assert_allclose(inside, p, rtol=1e-13)
    assert rosen.py_func(inside) < rosen.py_func(p0)


@njit
def value_and_grad_inside(p):
    v, g = rosen_vg(p)
    return v, g.sum()


def test_value_and_grad_in_njit():
    p = np.array([0.1, 0.4, -0.3])
    v, gs = value_and_grad_inside(p)
    assert v == pytest.approx(rosen.py_func(p))
    assert gs == pytest.approx(rosen_grad(p).sum())


@njit
def scalar_model(a, b, t):
    return a * math.exp(-b * t)


model_grad = zymase.grad(scalar_model, argnums=(0, 1))


@njit
def fit_step(a, b, ts, ys, lr):
    # least squares: sum (model - y)^2, gradient assembled from per-point gradients
    ga = 0.0
    gb = 0.0
    for k in range(ts.shape[0]):
        r = scalar_model(a, b, ts[k]) - ys[k]
        da, db = model_grad(a, b, ts[k])
        ga += 2 * r * da
        gb += 2 * r * db
    return a - lr * ga, b - lr * gb


def test_scalar_gradient_inside_njit_loop():
    ts = np.linspace(0, 2, 9)
    ys = 2.0 * np.exp(-0.7 * ts)
    a, b = fit_step(1.5, 0.5, ts, ys, 0.0)
    assert (a, b) == (1.5, 0.5)
    a1, b1 = fit_step(1.5, 0.5, ts, ys, 0.01)
    ga = sum(2 * (1.5 * math.exp(-0.5 * t) - y) * math.exp(-0.5 * t) for t, y in zip(ts, ys))
    gb = sum(2 * (1.5 * math.exp(-0.5 * t) - y) * (-1.5 * t * math.exp(-0.5 * t)) for t, y in zip(ts, ys))
    assert a1 == pytest.approx(1.5 - 0.01 * ga, rel=1e-12)
    assert b1 == pytest.approx(0.5 - 0.01 * gb, rel=1e-12)
