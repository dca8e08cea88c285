"""The chunked Hessian of njit fuzz seed 910002 (njit-hessian mode, reduced by hand):
at 11 elements, forward over reverse at width 8, LLVM 22.1's SLP vectorizer left the
kernel's module invalid ("Instruction does not dominate all uses") and zymase crashed
with an internal error; ``toolchain.optimize`` now runs the pipeline again without SLP
when that happens. The Hessian is checked against central differences of ``grad``.
(The failure depends on LLVM's SLP heuristics: with another LLVM it may not occur.)"""

import math

import numpy as np
from numba import njit

import zymase


@njit
def _g1(a, b):
    t = b - b
    return t + math.sin(math.atan(a) / (1.0 + b * b))


@njit
def _g2(a, b):
    t = (1.1 + a) - (b + b)
    return t + math.tanh(-0.25 + (-2.0 + a))


@njit
def _ga3(p):
    s = 0.0
    for i in range(p.shape[0]):
        s += math.sin((-0.25 + p[i]) * (p[0] * p[i]))
    return s


@njit
def _f(x, a):
    t5 = _ga3(x)
    t6 = math.tanh(x[0])
    y8 = np.cumsum(np.tanh(x)) * 0.3
    t9 = np.dot(x, y8)
    t10 = _g1(x[0], t6 - y8[2])
    t11 = _g2(math.exp(-(t6 * t6)), math.atan2(x[0], 0.5 + t6 * t6))
    return t5 + t6 + t9 + t10 + t11 - 1.3 * x[3] - 1.5 * y8[4]


def test_chunked_hessian_where_slp_breaks_the_module():
    x = np.linspace(-1.0, 1.0, 11)
    H = np.asarray(zymase.hessian(_f, argnums=0)(x.copy(), 0.9))
    grad = zymase.grad(_f, argnums=0)
    fd = np.empty_like(H)
    h = 1e-5
    for j in range(x.size):
        up, down = x.copy(), x.copy()
        up[j] += h
        down[j] -= h
        fd[:, j] = (grad(up, 0.9) - grad(down, 0.9)) / (2 * h)
    np.testing.assert_allclose(H, fd, rtol=1e-6, atol=1e-7)
