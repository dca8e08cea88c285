"""jvp, vjp, jacfwd, jacrev and jacobian of njit functions returning float arrays and
tuples (issue 25 item 3, parts 1, 2 and 4): values against closed forms and central
finite differences, float32 and float64, output shapes as JAX's rule gives them
(``jacfwd(f)(x).shape == f(x).shape + x.shape``; tuples for tuple outputs and tuple
argnums), and wrong calls refused with one ZymaseError.

Compiles are the cost here: each function below is compiled once per dtype and mode,
and every check reuses those kernels (the transforms differentiate every float
argument, whatever ``argnums`` selects)."""

import math

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def waves(x, a):
    """R^n x R -> R^(2 x n): rows a*sin(x) and a*x^2."""
    out = np.empty((2, x.shape[0]), dtype=x.dtype)
    for i in range(x.shape[0]):
        out[0, i] = a * math.sin(x[i])
        out[1, i] = a * x[i] * x[i]
    return out


@njit
def energy_and_field(x, y):
    """(y * sum x^2, exp(y) * x): a tuple of a float and an array."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return y * s, math.exp(y) * x


@njit
def counts(x):
    return np.arange(x.shape[0])


X = np.array([0.3, -0.7, 1.1, 0.45])
N = X.shape[0]


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


def _waves_jac(x, a):
    """Closed form: d waves / dx (2, n, n) and d waves / da (2, n)."""
    jx = np.zeros((2, x.size, x.size))
    jx[0][np.diag_indices(x.size)] = a * np.cos(x)
    jx[1][np.diag_indices(x.size)] = 2 * a * x
    return jx, np.stack([np.sin(x), x * x])


def _fd_jac(f, args, argnum, h=1e-6):
    """Central differences of a function returning one array, shaped out + in."""
    x = np.asarray(args[argnum], dtype=np.float64)
    cols = []
    for k in range(x.size):
        plus, minus = x.copy().reshape(-1), x.copy().reshape(-1)
        plus[k] += h
        minus[k] -= h
        a_p, a_m = list(args), list(args)
        a_p[argnum] = plus.reshape(x.shape) if x.ndim else float(plus[0])
        a_m[argnum] = minus.reshape(x.shape) if x.ndim else float(minus[0])
        cols.append((np.asarray(f(*a_p)) - np.asarray(f(*a_m))) / (2 * h))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


# -- item 1: jvp and vjp of array and tuple outputs -----------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jvp_of_an_array_valued_function(dtype):
    x, a = X.astype(dtype), dtype(1.7)
    dx = np.array([1.0, -2.0, 0.5, 0.25], dtype)
    out, tangent = zymase.jvp(waves, (x, a), (dx, dtype(0.3)))
    jx, ja = _waves_jac(X, 1.7)
    assert out.shape == (2, N) and tangent.shape == (2, N) and tangent.dtype == dtype
    np.testing.assert_allclose(out, waves.py_func(X, 1.7), **_tol(dtype))
    np.testing.assert_allclose(tangent, jx @ dx.astype(np.float64) + ja * 0.3, **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vjp_of_an_array_valued_function(dtype):
    x, a = X.astype(dtype), dtype(1.7)
    out, pullback = zymase.vjp(waves, x, a)
    ct = np.array([[1.0, 0.5, -1.0, 2.0], [0.25, -0.5, 1.5, 1.0]], dtype)
    gx, ga = pullback(ct)
    jx, ja = _waves_jac(X, 1.7)
    c = ct.astype(np.float64)
    assert gx.shape == (N,) and gx.dtype == dtype
    np.testing.assert_allclose(gx, np.einsum("ij,ijk->k", c, jx), **_tol(dtype))
    np.testing.assert_allclose(ga, np.sum(c * ja), **_tol(dtype))
    np.testing.assert_allclose(x, X.astype(dtype))  # the primals are untouched


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jvp_and_vjp_of_a_tuple_output(dtype):
    x, y = X.astype(dtype), dtype(0.6)
    dx = np.array([0.5, 1.0, -1.0, 2.0], dtype)
    (s, v), (ds, dv) = zymase.jvp(energy_and_field, (x, y), (dx, dtype(-0.4)))
    xd = X.astype(np.float64)
    assert np.shape(s) == () and v.shape == (N,) and np.shape(ds) == () and dv.shape == (N,)
    np.testing.assert_allclose(ds, 2 * 0.6 * xd @ dx + np.sum(xd * xd) * -0.4, **_tol(dtype))
    np.testing.assert_allclose(dv, math.exp(0.6) * (dx + xd * -0.4), **_tol(dtype))
    _, pullback = zymase.vjp(energy_and_field, x, y)
    cv = np.array([1.0, -1.0, 0.5, 0.25], dtype)
    gx, gy = pullback((dtype(2.0), cv))
    np.testing.assert_allclose(gx, 2.0 * 2 * 0.6 * xd + math.exp(0.6) * cv, **_tol(dtype))
    np.testing.assert_allclose(gy, 2.0 * np.sum(xd * xd) + math.exp(0.6) * xd @ cv, **_tol(dtype))


# -- item 2: Jacobians, shapes as JAX's --------------------------------------------------


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev", "jacobian"])
def test_jacobian_of_an_array_valued_function(transform):
    jac = getattr(zymase, transform)
    jx, ja = _waves_jac(X, 1.7)
    j = jac(waves)(X, 1.7)
    assert j.shape == (2, N, N)  # jax: f(x).shape + x.shape
    np.testing.assert_allclose(j, jx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j, _fd_jac(waves.py_func, (X, 1.7), 0), rtol=1e-6, atol=1e-8)
    both = jac(waves, argnums=(0, 1))(X, 1.7)
    assert isinstance(both, tuple) and both[0].shape == (2, N, N) and both[1].shape == (2, N)
    np.testing.assert_allclose(both[1], ja, rtol=1e-12)
    np.testing.assert_allclose(jac(waves, argnums=1)(X, 1.7), _fd_jac(waves.py_func, (X, 1.7), 1), rtol=1e-6)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobian_of_a_tuple_output(transform, dtype):
    x, y = X.astype(dtype), dtype(0.6)
    jac = getattr(zymase, transform)(energy_and_field, argnums=(0, 1))(x, y)
    # jax: the output's structure, each leaf a tuple over argnums of out.shape + in.shape
    assert [[np.shape(leaf) for leaf in row] for row in jac] == [[(N,), ()], [(N, N), (N,)]]
    assert jac[1][0].dtype == dtype
    xd = X.astype(np.float64)
    np.testing.assert_allclose(jac[0][0], 2 * 0.6 * xd, **_tol(dtype))
    np.testing.assert_allclose(jac[0][1], np.sum(xd * xd), **_tol(dtype))
    np.testing.assert_allclose(jac[1][0], math.exp(0.6) * np.eye(N), **_tol(dtype))
    np.testing.assert_allclose(jac[1][1], math.exp(0.6) * xd, **_tol(dtype))
    single = getattr(zymase, transform)(energy_and_field)(x, y)
    assert [np.shape(leaf) for leaf in single] == [(N,), (N, N)]


@njit
def scaled_norm(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return y * math.sqrt(s)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_jacobian_of_a_float_valued_function_is_its_gradient(transform):
    jx, jy = getattr(zymase, transform)(scaled_norm, argnums=(0, 1))(X, 2.5)
    norm = math.sqrt(np.sum(X * X))
    assert jx.shape == (N,) and np.shape(jy) == ()  # jax: () + in.shape
    np.testing.assert_allclose(jx, 2.5 * X / norm, rtol=1e-12)
    np.testing.assert_allclose(jy, norm, rtol=1e-12)


@njit
def named_like_glue(f, r, out0, v, i0):
    """Parameters named as the output writer's own names (its call, result, output
    array, copied value and loop index)."""
    return np.array([f * r[0], out0 * v[1], i0 * r[1]])


def test_output_writer_names_do_not_collide_with_parameters():
    r, v = np.array([2.0, 3.0]), np.array([5.0, 7.0])
    out, tangent = zymase.jvp(named_like_glue, (1.5, r, 0.5, v, 4.0), (1.0, np.zeros(2), 0.0, np.zeros(2), 1.0))
    np.testing.assert_allclose(out, [3.0, 3.5, 12.0], rtol=1e-12)
    np.testing.assert_allclose(tangent, [2.0, 0.0, 3.0], rtol=1e-12)


# -- item 4: wrong calls --------------------------------------------------------------


def _only_zymase_error(call, *words):
    with pytest.raises(ZymaseError) as info:
        call()
    text = str(info.value)
    assert "Traceback" not in text and "numba" not in text.lower().replace("@numba.njit", "")
    for w in words:
        assert w in text, (w, text)


def test_cotangent_of_the_wrong_shape():
    _, pullback = zymase.vjp(waves, X, 1.7)
    _only_zymase_error(lambda: pullback(np.ones(N)), "shape (4,)", "(2, 4)")


def test_array_cotangent_where_a_tuple_is_expected():
    _, pullback = zymase.vjp(energy_and_field, X, 0.6)
    _only_zymase_error(lambda: pullback(np.ones(N)), "tuple")
    _only_zymase_error(lambda: pullback((1.0,)), "2")
    _only_zymase_error(lambda: pullback((np.ones(N), 1.0)), "[0]")


def test_integer_outputs_are_refused():
    for call in (lambda: zymase.jvp(counts, (X,), (X,)), lambda: zymase.vjp(counts, X),
                 lambda: zymase.jacfwd(counts)(X), lambda: zymase.jacrev(counts)(X)):
        _only_zymase_error(call, "'counts'", "int64")


def test_jacobian_argument_checks():
    _only_zymase_error(lambda: zymase.jacfwd(waves, argnums=2)(X, 1.7), "argnums")
    _only_zymase_error(lambda: zymase.jacrev(waves)(X), "'a'")
    _only_zymase_error(lambda: zymase.jacfwd(waves)(X.astype(np.int64), 1.7), "'x'")
