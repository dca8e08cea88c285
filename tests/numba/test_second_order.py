"""Second derivatives of njit functions, computed forward over reverse in the engine
(issue 25 item 3, parts 2, 3 and 4): ``hessian``, ``hvp``, ``grad(grad(f))``,
``jacfwd(grad(f))`` and ``jvp(grad(f))`` against closed forms and central differences
of the gradient, float32 and float64, shapes as JAX's rule gives them, derivatives of
njit code that calls a ``grad``, and compositions whose result is not a float refused
with one ZymaseError (the other compositions: test_higher_order.py).

Each function is compiled once per dtype: every check below reuses the one nested
(forward over reverse) kernel of that function."""

import math

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def rosen(x, c):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return c * s


@njit
def mixed(x, y):
    return x ** 3 * y ** 2 + math.sin(x * y)


def rosen_grad(x):
    g = np.zeros_like(x)
    g[:-1] += -400 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200 * (x[1:] - x[:-1] ** 2)
    return g


def rosen_hessian(x):
    n = x.size
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


X = np.array([0.3, -0.7, 1.1, 0.45, 0.9])
N = X.size
C = 1.5


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hessian_of_rosenbrock(dtype):
    h = zymase.hessian(rosen)(X.astype(dtype), dtype(C))
    assert h.shape == (N, N) and h.dtype == dtype  # jax: x.shape + x.shape
    np.testing.assert_allclose(h, C * rosen_hessian(X), **_tol(dtype))


def test_hessian_against_differences_of_the_gradient():
    g = zymase.grad(rosen)
    h = 1e-6
    fd = np.stack([(g(X + h * e, C) - g(X - h * e, C)) / (2 * h) for e in np.eye(N)], axis=-1)
    np.testing.assert_allclose(zymase.hessian(rosen)(X, C), fd, rtol=1e-6, atol=1e-5)


def test_hessian_with_tuple_argnums():
    hs = zymase.hessian(rosen, argnums=(0, 1))(X, C)
    # jax: a tuple of tuples, block (i, j) shaped args[i].shape + args[j].shape
    assert [[np.shape(b) for b in row] for row in hs] == [[(N, N), (N,)], [(N,), ()]]
    np.testing.assert_allclose(hs[0][0], C * rosen_hessian(X), rtol=1e-12)
    np.testing.assert_allclose(hs[0][1], rosen_grad(X), rtol=1e-12)
    np.testing.assert_allclose(hs[1][0], rosen_grad(X), rtol=1e-12)
    assert hs[1][1] == 0.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hvp_of_rosenbrock(dtype):
    v = np.array([1.0, 0.5, -0.3, 0.2, -1.0])
    hv = zymase.hvp(rosen)(X.astype(dtype), dtype(C), v.astype(dtype))
    assert hv.shape == (N,) and hv.dtype == dtype
    np.testing.assert_allclose(hv, C * rosen_hessian(X) @ v, **_tol(dtype))


def test_jvp_of_grad_is_a_hessian_vector_product():
    v = np.array([1.0, 0.5, -0.3, 0.2, -1.0])
    g, hv = zymase.jvp(zymase.grad(rosen), (X, C), (v, 0.0))
    np.testing.assert_allclose(g, C * rosen_grad(X), rtol=1e-12)
    np.testing.assert_allclose(hv, C * rosen_hessian(X) @ v, rtol=1e-12)
    # a tangent on c too: d/dc of grad is grad/c
    _, hv = zymase.jvp(zymase.grad(rosen), (X, C), (v, 2.0))
    np.testing.assert_allclose(hv, C * rosen_hessian(X) @ v + 2.0 * rosen_grad(X), rtol=1e-12)


def test_jacfwd_of_grad_is_the_hessian():
    h = zymase.jacfwd(zymase.grad(rosen))(X, C)
    assert h.shape == (N, N)
    np.testing.assert_allclose(h, C * rosen_hessian(X), rtol=1e-12)
    cross = zymase.jacfwd(zymase.grad(rosen), argnums=1)(X, C)
    assert cross.shape == (N,)  # jax: grad's shape + c's shape ()
    np.testing.assert_allclose(cross, rosen_grad(X), rtol=1e-12)


def test_grad_of_grad_of_a_scalar_function():
    # reverse over reverse (issue 25 item 1): one kernel for both second derivatives
    x, y = 0.7, -1.3
    d2x, dxy = zymase.grad(zymase.grad(mixed), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(d2x, 6 * x * y * y - y * y * math.sin(x * y), rtol=1e-12)
    np.testing.assert_allclose(dxy, 6 * x * x * y + math.cos(x * y) - x * y * math.sin(x * y), rtol=1e-12)
    d2y = zymase.grad(zymase.grad(mixed, argnums=1), argnums=1)(x, y)
    np.testing.assert_allclose(d2y, 2 * x ** 3 - x * x * math.sin(x * y), rtol=1e-12)
    both = zymase.hessian(mixed, argnums=(0, 1))(x, y)
    np.testing.assert_allclose(np.array(both, dtype=float), [[d2x, dxy], [dxy, d2y]], rtol=1e-12)


# -- item 4 and the compositions that are not built ------------------------------------


def _only_zymase_error(call, *words):
    with pytest.raises(ZymaseError) as info:
        call()
    text = str(info.value)
    assert "Traceback" not in text
    for w in words:
        assert w in text, (w, text)


def test_hvp_vector_of_the_wrong_shape():
    _only_zymase_error(lambda: zymase.hvp(rosen)(X, C, np.ones(N + 1)), "'x'", "(6,)", "(5,)")
    _only_zymase_error(lambda: zymase.hvp(rosen, argnums=(0, 1))(X, C, np.ones(N)), "tuple")


def test_grad_of_an_array_gradient_is_refused():
    _only_zymase_error(lambda: zymase.grad(zymase.grad(rosen))(X, C), "grad(rosen)", "hessian", "jacfwd")


def test_second_order_of_an_array_valued_function_is_refused():
    @njit
    def twice(x):
        return 2.0 * x

    _only_zymase_error(lambda: zymase.hessian(twice)(X), "<locals>.twice' to return a float")


def test_grad_of_value_and_grad_is_refused_as_not_a_float():
    # value_and_grad composes like any transform; its result is a tuple, not a float
    _only_zymase_error(lambda: zymase.grad(zymase.value_and_grad(mixed))(0.7, -1.3),
                       "value_and_grad(mixed)", "return a float", "jacfwd")


@njit
def cubes(x):
    return np.sum(x * x * x)


cubes_grad = zymase.grad(cubes)


@njit
def gradient_norm(x):
    g = cubes_grad(x)
    return np.sum(g * g)


def test_njit_code_calling_a_gradient_is_differentiated():
    # issue 25 item 3: the gradient called inside njit code is a compiled kernel; its
    # source is linked into the caller's IR, so grad (reverse over reverse), jvp
    # (forward over reverse) and hessian (forward over reverse over reverse) see through it
    x = np.array([0.5, 1.0, -2.0])
    v = np.array([1.0, -0.5, 0.25])
    assert gradient_norm(x) == pytest.approx(np.sum((3 * x * x) ** 2))
    np.testing.assert_allclose(zymase.grad(gradient_norm)(x), 36 * x ** 3, rtol=1e-14)
    value, tangent = zymase.jvp(gradient_norm, (x,), (v,))
    assert tangent == pytest.approx(36 * x ** 3 @ v, rel=1e-14)
    np.testing.assert_allclose(zymase.hessian(gradient_norm)(x), np.diag(108 * x ** 2), rtol=1e-14)


def sin_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * x[i]
    return s


sin_sum = njit(sin_sum)
sin_sum_grad = zymase.grad(sin_sum)
sin_sum_value_and_grad = zymase.value_and_grad(sin_sum)


@njit
def loss_after_a_step(x, lr):
    # an optimizer step inside njit code: the loss where one gradient step lands
    g = sin_sum_grad(x)
    return sin_sum(x - lr * g)


@njit
def value_times_slope(x):
    v, g = sin_sum_value_and_grad(x)
    return v * np.sum(g)


def test_gradient_through_an_optimizer_step_in_njit_code():
    x, lr = np.array([0.3, -1.2, 0.8, 2.0, -0.4]), 0.1
    grad = np.cos(x) * x + np.sin(x)
    hess = -np.sin(x) * x + 2 * np.cos(x)  # diagonal
    y = x - lr * grad
    grad_y = np.cos(y) * y + np.sin(y)
    dx, dlr = zymase.grad(loss_after_a_step, argnums=(0, 1))(x, lr)
    np.testing.assert_allclose(dx, (1 - lr * hess) * grad_y, rtol=1e-13)  # closed form
    assert dlr == pytest.approx(-grad @ grad_y, rel=1e-13)
    h = 1e-6
    fd = (loss_after_a_step(x, lr + h) - loss_after_a_step(x, lr - h)) / (2 * h)
    assert dlr == pytest.approx(fd, rel=1e-7)  # central differences
    s, t = np.sum(np.sin(x) * x), np.sum(grad)
    np.testing.assert_allclose(zymase.grad(value_times_slope)(x), grad * t + s * hess, rtol=1e-13)


@njit
def scaled_sum_of_cubes(p, c):
    return c * np.sum(p * p * p)  # p * p * p makes temporary arrays


def test_hessian_through_temporary_arrays():
    # the gradient releases the temporaries' derivative arrays (NRT_MemInfo_call_dtor);
    # forward mode over it releases their tangents' arrays too
    hs = zymase.hessian(scaled_sum_of_cubes, argnums=(0, 1))(X, C)
    np.testing.assert_allclose(hs[0][0], np.diag(6 * C * X), rtol=1e-12)
    np.testing.assert_allclose(hs[0][1], 3 * X * X, rtol=1e-12)
    assert hs[1][1] == 0.0


@njit
def tuple_energy(p, c):
    a, b = p
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i] * b
    return c * (s + b * b * b)


def test_hessian_with_respect_to_a_tuple_argument():
    hs = zymase.hessian(tuple_energy)((X, 0.7), C)
    # jax: the argument's structure of the argument's structure, (a, b) x (a, b)
    assert [[np.shape(b) for b in row] for row in hs] == [[(N, N), (N,)], [(N,), ()]]
    np.testing.assert_allclose(hs[0][0], 2 * C * 0.7 * np.eye(N), rtol=1e-12)
    np.testing.assert_allclose(hs[0][1], 2 * C * X, rtol=1e-12)
    np.testing.assert_allclose(hs[1][0], 2 * C * X, rtol=1e-12)
    np.testing.assert_allclose(hs[1][1], 6 * C * 0.7, rtol=1e-12)


@njit
def cubed_differences(p):
    d = np.diff(p)  # Numba's slice assignment tests its operands' addresses for overlap
    return np.sum(d ** 3)


def test_hessian_through_np_diff():
    # session 32: the gradient keeps the overlap test's integer addresses in stack slots,
    # and forward mode over it refused them as addresses handed on as integers
    d = np.diff(X)
    expected = np.zeros((N, N))
    for k in range(N - 1):
        e = np.zeros(N)
        e[k], e[k + 1] = -1.0, 1.0
        expected += 6.0 * d[k] * np.outer(e, e)
    np.testing.assert_allclose(zymase.hessian(cubed_differences)(X), expected, rtol=1e-12, atol=1e-13)


@njit
def norms(p, step):
    return np.linalg.norm(p) + np.linalg.norm(p[::step]) ** 2


def test_hessian_through_np_linalg_norm():
    # session 32: second derivatives through np.linalg.norm of a vector were refused
    # (Numba's BLAS wrapper numba_xxnrm2 has a first-order call rule only); it is now a
    # loop in nested kernels, as np.dot's. A reversed view (a negative increment, which
    # Numba hands to BLAS, whose norm then differs from NumPy's) gives NaN for the view's
    # elements, as the first-order rule does, not a wrong number
    n = np.linalg.norm(X)
    expected = np.eye(N) / n - np.outer(X, X) / n ** 3 + 2.0 * np.diag(np.arange(N) % 2 == 0)
    np.testing.assert_allclose(zymase.hessian(norms)(X, 2), expected, rtol=1e-12, atol=1e-14)
    backward = zymase.hessian(norms)(X, -2)
    view = np.zeros(N, dtype=bool)
    view[::-2] = True
    assert np.isnan(backward[np.ix_(view, view)]).all()
    np.testing.assert_allclose(backward[np.ix_(~view, ~view)], (np.eye(N) / n - np.outer(X, X) / n ** 3)[np.ix_(~view, ~view)],
                               rtol=1e-12, atol=1e-14)
