"""Dense Hessians and ``jacfwd(grad(f))`` by vector forward mode over reverse (issue 25
item 2): one call of the nested kernel at width N per N columns (``api_outputs.CHUNK``
= 8; fewer when there are fewer inputs), the last chunk padded with zero tangents.

Checked: the width-N kernel computes the primal once per call (as many ``exp`` calls in
its optimized IR as the width-1 kernel's, not N times as many), every column equals the
width-1 kernel's (``hvp`` with a basis vector), against a closed form and central
differences of the gradient at n = 1, 3, 8, 9 (8 does not divide 9), float32, a
function that writes into its argument (the Hessian runs it on a copy), a 2-D argument
beside an array it does not differentiate, tuple ``argnums``. Past one chunk (n > 8)
the chunks are an njit loop (``SecondOrder._chunked_hessian``); up to 8, and for tuple
``argnums`` and ``jacfwd(grad(f))``, the columns are assembled in Python: both are
covered. Each test also checks which widths were compiled, so it fails where the
Hessian is one width-1 call per column."""

import math

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.frontends import numba as zn


@njit
def cyclic(x, a):
    """sum_i exp(a x_i x_{i+1 mod n}) + a^2 x_i: every input coupled to two others."""
    n = x.shape[0]
    s = 0.0
    for i in range(n):
        s += math.exp(a * x[i] * x[(i + 1) % n]) + a * a * x[i]
    return s


def cyclic_hessian(x, a):
    """Closed form d^2 cyclic / dx^2."""
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        j = (i + 1) % n
        t = math.exp(a * x[i] * x[j])
        h[i, i] += a * a * x[j] ** 2 * t
        h[j, j] += a * a * x[i] ** 2 * t
        c = a * t + a * a * x[i] * x[j] * t
        h[i, j] += c
        h[j, i] += c
    return h


def _nested_widths(name: str) -> set:
    """Widths of the forward-over-reverse kernels compiled so far for function ``name``."""
    return {r.width for r in zymase.stats() if r.function.endswith(name) and r.mode == "fwd"}


@pytest.fixture(scope="module")
def cyclic_kernels():
    """The optimized IR of cyclic's nested kernels at width 1 and 8, captured as they
    are compiled (hvp: width 1; the Hessian at n = 9: width 8)."""
    texts = []
    jit = zn._jit_in_numba
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zn, "_jit_in_numba", lambda text, *rest: (texts.append(text), jit(text, *rest))[1])
        x = np.linspace(-0.8, 0.9, 9)
        zymase.hvp(cyclic)(x, 0.6, np.ones(9))
        one = texts[-1]
        h = zymase.hessian(cyclic)(x, 0.6)
        eight = texts[-1]
    return one, eight, x, h


def test_the_width_8_kernel_computes_the_primal_once(cyclic_kernels):
    one, eight, x, h = cyclic_kernels
    assert 8 in _nested_widths("cyclic")
    assert one is not eight
    exps = [len([ln for ln in t.splitlines() if "call" in ln and ("@llvm.exp." in ln or "@exp(" in ln)])
            for t in (one, eight)]
    # one primal (its exp taped or recomputed once), eight tangent lanes: not 8 copies
    assert exps[0] >= 1 and exps[1] == exps[0], exps
    np.testing.assert_allclose(h, cyclic_hessian(x, 0.6), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 8, 9])
def test_hessian_columns_equal_the_width_1_kernel(n, cyclic_kernels):
    x, a = np.linspace(-0.8, 0.9, n), 0.6
    h = zymase.hessian(cyclic)(x, a)
    assert h.shape == (n, n)
    assert min(n, 8) in _nested_widths("cyclic")
    hv = zymase.hvp(cyclic)
    for j, e in enumerate(np.eye(n)):
        np.testing.assert_allclose(h[:, j], hv(x, a, e), rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(h, cyclic_hessian(x, a), rtol=1e-12, atol=1e-12)
    g, d = zymase.grad(cyclic), 1e-6
    fd = np.stack([(g(x + d * e, a) - g(x - d * e, a)) / (2 * d) for e in np.eye(n)], axis=-1)
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)


def test_hessian_float32_in_chunks(cyclic_kernels):
    x = np.linspace(-0.8, 0.9, 9)
    h = zymase.hessian(cyclic)(x.astype(np.float32), np.float32(0.6))
    assert h.dtype == np.float32 and h.shape == (9, 9)
    assert sum(1 for r in zymase.stats() if r.function.endswith("cyclic") and r.mode == "fwd"
               and r.width == 8 and "float32" in r.signature) == 1
    np.testing.assert_allclose(h, cyclic_hessian(x, 0.6), rtol=2e-5, atol=2e-5)


def test_jacfwd_of_grad_with_tuple_argnums_in_chunks(cyclic_kernels):
    # blocks (x, a) x (x, a): the x columns in chunks of 8 (9 = 8 + 1 padded), a's alone
    x, a = np.linspace(-0.8, 0.9, 9), 0.6
    hs = zymase.hessian(cyclic, argnums=(0, 1))(x, a)
    js = zymase.jacfwd(zymase.grad(cyclic, argnums=(0, 1)), argnums=(0, 1))(x, a)
    assert [[np.shape(b) for b in row] for row in hs] == [[(9, 9), (9,)], [(9,), ()]]
    g, d = zymase.grad(cyclic, argnums=(0, 1)), 1e-6
    fd_x = [[(p - m) / (2 * d) for p, m in zip(g(x + d * e, a), g(x - d * e, a))] for e in np.eye(9)]
    fd_a = [(p - m) / (2 * d) for p, m in zip(g(x, a + d), g(x, a - d))]
    want = [[np.stack([c[0] for c in fd_x], -1), fd_a[0]], [np.array([c[1] for c in fd_x]), fd_a[1]]]
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(hs[i][j], js[i][j], rtol=1e-14, atol=1e-14)
            np.testing.assert_allclose(hs[i][j], want[i][j], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(hs[0][0], cyclic_hessian(x, a), rtol=1e-12, atol=1e-12)
    assert 8 in _nested_widths("cyclic")


@njit
def squares_in_place(x):
    """Writes x_i^2 into its argument, then sums sin of it: H = diag(2 cos(x^2) - 4 x^2 sin(x^2))."""
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i])
    return s


def test_hessian_of_a_function_writing_into_its_argument():
    # all lanes of a chunk go through one call on one copy of x: each column must
    # still be taken at the caller's x, which stays as it was
    x = np.linspace(-1.1, 1.2, 9)
    before = x.copy()
    h = zymase.hessian(squares_in_place)(x)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(x * x) - 4 * x * x * np.sin(x * x)), rtol=1e-12, atol=1e-12)
    assert 8 in _nested_widths("squares_in_place")


@njit
def columns_coupled(X, w):
    """sum_ij w_j sin(X_ij X_(i+1 mod m)j): a 2-D argument, a weight array held fixed."""
    m = X.shape[0]
    s = 0.0
    for i in range(m):
        for j in range(X.shape[1]):
            s += w[j] * math.sin(X[i, j] * X[(i + 1) % m, j])
    return s


def test_hessian_of_a_2d_argument_in_chunks():
    # 12 inputs: the njit loop over chunks of 8 (8 + 4 padded), blocks shaped X.shape + X.shape
    X, w = np.linspace(-0.7, 1.1, 12).reshape(3, 4), np.array([0.5, -1.0, 2.0, 1.5])
    h = zymase.hessian(columns_coupled)(X, w)
    assert h.shape == (3, 4, 3, 4)
    assert 8 in _nested_widths("columns_coupled")
    g, d = zymase.grad(columns_coupled), 1e-6
    fd = np.stack([((g(X + d * e.reshape(3, 4), w) - g(X - d * e.reshape(3, 4), w)) / (2 * d)).reshape(12)
                   for e in np.eye(12)], axis=-1)
    np.testing.assert_allclose(h.reshape(12, 12), fd, rtol=1e-6, atol=1e-6)
