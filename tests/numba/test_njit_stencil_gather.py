"""A Numba stencil's reverse loop has its adjoint adds gathered, one element per
iteration (autodiff/stencil_gather.py), as C's has: the gradient of a heat equation with
swapped buffers against central differences, and ZYMASE_DEBUG_TAPE=1 naming the loop."""

import numpy as np
from numba import njit

import zymase
from njit_fd import fd_grad


@njit
def heat(u, steps):
    a = u.copy()
    b = np.empty_like(a)
    n = a.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            b[i] = a[i] + 0.25 * (a[i - 1] - 2.0 * a[i] + a[i + 1]) - 0.05 * a[i] ** 3
        b[0] = a[0]
        b[n - 1] = a[n - 1]
        a, b = b, a
    s = 0.0
    for i in range(n):
        s += a[i] * (1.0 + 0.01 * i)
    return s


def test_heat_gradient_with_gathered_stencil_adds(monkeypatch, capfd):
    monkeypatch.setenv("ZYMASE_DEBUG_TAPE", "1")
    u = 0.5 + 0.4 * np.sin(0.3 * np.arange(40))
    got = zymase.grad(heat, cache=False)(u, 3)
    assert "adjoint adds at 3 offsets gathered" in capfd.readouterr().err
    want = fd_grad(heat, (u, 3), 0)
    assert np.allclose(got, want, rtol=1e-6, atol=1e-8), np.abs(got - want).max()
