"""Numba vectorizes loops (``<4 x double>``); zymase differentiates an unvectorized
private copy and vectorizes the derivative afterwards, also for callees the user has
already compiled and calls through a module attribute."""

import re

import numpy as np
from numba import njit

import vector_callees as vc
import zymase


@njit
def f(x, a):
    vc.scale(x, a)
    return vc.sumsq(x)


def test_callees_compiled_vectorized_by_numba_are_differentiated():
    x = np.linspace(0, 1, 103)
    vc.scale(x.copy(), 2.0)
    vc.sumsq(x)
    for d in (vc.scale, vc.sumsq):
        assert re.search(r"<\d+ x double>", d.inspect_llvm(d.signatures[0])), "the premise: Numba vectorized it"
    gx, ga = zymase.grad(f, argnums=(0, 1))(x.copy(), 2.0)
    np.testing.assert_allclose(gx, 2 * 2.0 * 2.0 * x, rtol=1e-12)
    np.testing.assert_allclose(ga, 2 * 2.0 * np.sum(x * x), rtol=1e-12)
    # the user's own dispatchers keep their optimized code and still work
    assert abs(vc.sumsq(x) - np.sum(x * x)) < 1e-12
