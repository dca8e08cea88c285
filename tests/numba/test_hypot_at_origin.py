"""hypot at the origin (issue 23, fuzz seeds 700278 and 800285): hypot is a cone there, not
differentiable, and its partials a / r, b / r are 0 / 0. zymase takes them as 0, so a
program that evaluates hypot(0, 0) on values that depend on the inputs, but whose result
does not, gets the derivative it has, in reverse mode as in forward mode (it was NaN in
reverse)."""

import math

import numpy as np
import pytest
from numba import njit

import zymase


@njit
def stays_at_origin(p):
    s = 0.0
    for i in range(p.shape[0]):
        s += math.tanh(math.hypot(s, s * p[i]))  # s stays 0: hypot(0, 0) every time
    return s + p[0] * p[1]


@njit
def cancels(x):
    a = x[0] * 0.75 - x[0] * 0.75  # exactly 0, with derivative 0
    return math.hypot(a, a) + 2.0 * x[1]


def test_reverse_mode_through_hypot_at_the_origin():
    p = np.array([0.3, -1.2, 2.0])
    assert zymase.grad(stays_at_origin)(p) == pytest.approx([-1.2, 0.3, 0.0], abs=0, rel=1e-15)
    assert zymase.grad(cancels)(np.array([0.5, 1.0])) == pytest.approx([0.0, 2.0], abs=0, rel=1e-15)


def test_forward_mode_agrees():
    p = np.array([0.3, -1.2, 2.0])
    for i, want in enumerate([-1.2, 0.3, 0.0]):
        t = np.zeros(3)
        t[i] = 1.0
        _, tangent = zymase.jvp(stays_at_origin, (p,), (t,))
        assert tangent == pytest.approx(want, abs=0, rel=1e-15)
