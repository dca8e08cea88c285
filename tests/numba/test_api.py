"""Every entry point of the Python API against closed forms."""

import math

import numpy as np
import pytest
from numba import njit

import zymase
from zymase import Active, Const, Duplicated, DuplicatedNoNeed


@njit
def loss(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += a * x[i] * x[i] + math.sin(a * x[i])
    return s


def loss_grads(x, a):
    dx = 2 * a * x + a * np.cos(a * x)
    da = np.sum(x * x + x * np.cos(a * x))
    return dx, da


@njit
def scale_into(out, x, a):
    for i in range(x.shape[0]):
        out[i] = a * x[i] * x[i]


X = np.linspace(0.2, 1.1, 6)


def test_grad_array_argument():
    g = zymase.grad(loss)(X.copy(), 1.3)
    np.testing.assert_allclose(g, loss_grads(X, 1.3)[0], rtol=1e-12)


def test_grad_scalar_argument():
    g = zymase.grad(loss, argnums=1)(X.copy(), 1.3)
    assert isinstance(g, float)
    np.testing.assert_allclose(g, loss_grads(X, 1.3)[1], rtol=1e-12)


def test_grad_tuple_argnums_and_negative_index():
    gx, ga = zymase.grad(loss, argnums=(0, -1))(X.copy(), 1.3)
    dx, da = loss_grads(X, 1.3)
    np.testing.assert_allclose(gx, dx, rtol=1e-12)
    np.testing.assert_allclose(ga, da, rtol=1e-12)


def test_value_and_grad():
    v, (gx, ga) = zymase.value_and_grad(loss, argnums=(0, 1))(X.copy(), 0.7)
    np.testing.assert_allclose(v, loss.py_func(X, 0.7), rtol=1e-14)
    dx, da = loss_grads(X, 0.7)
    np.testing.assert_allclose(gx, dx, rtol=1e-12)
    np.testing.assert_allclose(ga, da, rtol=1e-12)


def test_plain_python_function_is_compiled_with_njit():
    def f(a, b):
        return a * math.exp(b)

    assert zymase.grad(f, argnums=(0, 1))(2.0, 0.5) == pytest.approx((math.exp(0.5), 2 * math.exp(0.5)), rel=1e-14)


def test_njit_lambda_is_differentiated():
    # its name is "<lambda>": the trampoline zymase generates must still be valid Python
    f = njit(lambda x, a: a * x * x)
    assert zymase.grad(f)(1.5, 2.0) == pytest.approx(6.0)
    assert zymase.grad(lambda x: x ** 3)(2.0) == pytest.approx(12.0)


def test_float32_gamma_and_ldexp():
    # float32 goes through Numba's numba_gammaf / numba_ldexpf helpers; closed form
    # Gamma'(x) = Gamma(x) digamma(x)
    from scipy.special import digamma

    f = njit(lambda x: math.gamma(x) + math.ldexp(x, 2))
    assert zymase.grad(f)(np.float32(2.5)) == pytest.approx(math.gamma(2.5) * digamma(2.5) + 4.0, rel=1e-6)


def test_jvp():
    t = np.arange(6.0)
    v, tan = zymase.jvp(loss, (X, 1.3), (t, 0.5))
    dx, da = loss_grads(X, 1.3)
    np.testing.assert_allclose(v, loss.py_func(X, 1.3), rtol=1e-14)
    np.testing.assert_allclose(tan, dx @ t + 0.5 * da, rtol=1e-12)


def test_jvp_does_not_modify_primals_or_tangents():
    x, t = X.copy(), np.ones(6)

    @njit
    def mutating(x, a):
        for i in range(x.shape[0]):
            x[i] *= a
        return x.sum()

    v, tan = zymase.jvp(mutating, (x, 2.0), (t, 0.0))
    assert v == pytest.approx(2 * X.sum())
    assert tan == pytest.approx(2 * 6)
    np.testing.assert_array_equal(x, X)
    np.testing.assert_array_equal(t, np.ones(6))


def test_vjp_scales_with_cotangent():
    v, fn = zymase.vjp(loss, X, 1.3)
    np.testing.assert_allclose(v, loss.py_func(X, 1.3), rtol=1e-14)
    cx, ca = fn(2.0)
    dx, da = loss_grads(X, 1.3)
    np.testing.assert_allclose(cx, 2 * dx, rtol=1e-12)
    np.testing.assert_allclose(ca, 2 * da, rtol=1e-12)
    cx3, _ = fn(-3.0)  # reusable, independent calls
    np.testing.assert_allclose(cx3, -3 * dx, rtol=1e-12)


def test_vjp_integer_primal_has_no_cotangent():
    @njit
    def f(x, n):
        return x[n] ** 2

    _, fn = zymase.vjp(f, X, 2)
    cx, cn = fn(1.0)
    assert cn is None
    np.testing.assert_allclose(cx, np.where(np.arange(6) == 2, 2 * X[2], 0.0))


def test_autodiff_active_duplicated_const():
    dx = np.zeros(6)
    r = zymase.autodiff(loss, Duplicated(X.copy(), dx), Active(1.3))
    want_dx, want_da = loss_grads(X, 1.3)
    assert r[0] is None
    np.testing.assert_allclose(r[1], want_da, rtol=1e-12)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-12)


def test_autodiff_accumulates_into_shadows():
    dx = np.ones(6)
    zymase.autodiff(loss, Duplicated(X.copy(), dx), Const(1.3))
    np.testing.assert_allclose(dx, 1.0 + loss_grads(X, 1.3)[0], rtol=1e-12)


def test_autodiff_function_without_result_seeds_output_shadow():
    out, dout = np.zeros(6), np.arange(1.0, 7.0)
    dx = np.zeros(6)
    r = zymase.autodiff(scale_into, DuplicatedNoNeed(out, dout), Duplicated(X.copy(), dx), Active(0.5))
    np.testing.assert_allclose(dx, dout_orig := np.arange(1.0, 7.0) * 2 * 0.5 * X, rtol=1e-12)
    np.testing.assert_allclose(r[2], np.sum(np.arange(1.0, 7.0) * X * X), rtol=1e-12)
    assert r[0] is None and r[1] is None
    assert dout_orig is not None


def test_fwddiff_scalar_and_array_tangents():
    t = np.linspace(-1, 1, 6)
    tan = zymase.fwddiff(loss, Duplicated(X.copy(), t.copy()), Duplicated(1.3, 1.0))
    dx, da = loss_grads(X, 1.3)
    np.testing.assert_allclose(tan, dx @ t + da, rtol=1e-12)


def test_fwddiff_output_tangent_in_shadow():
    out, tout = np.zeros(6), np.zeros(6)
    r = zymase.fwddiff(scale_into, Duplicated(out, tout), Const(X.copy()), Duplicated(0.5, 1.0))
    assert r is None
    np.testing.assert_allclose(out, 0.5 * X * X)
    np.testing.assert_allclose(tout, X * X, rtol=1e-14)


def test_float32_gradient_keeps_dtype():
    @njit
    def f(x):
        return np.sum(x * x)

    x = np.linspace(0, 1, 5).astype(np.float32)
    g = zymase.grad(f)(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x, rtol=1e-6)


def test_tuple_of_floats_and_arrays():
    @njit
    def f(t):
        a, x = t
        return a * np.sum(x * x)

    ga, gx = zymase.grad(f)((1.5, X.copy()))
    assert ga == pytest.approx(np.sum(X * X))
    np.testing.assert_allclose(gx, 3.0 * X)


def test_two_dimensional_array():
    @njit
    def f(A):
        s = 0.0
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                s += A[i, j] ** 3
        return s

    A = np.arange(12.0).reshape(3, 4) / 7
    np.testing.assert_allclose(zymase.grad(f)(A.copy()), 3 * A * A, rtol=1e-13)


def test_stats_record_compilation(capsys, monkeypatch):
    monkeypatch.setenv("ZYMASE_DEBUG", "1")

    @njit
    def f(a):
        return a ** 3

    n = len(zymase.stats())
    assert zymase.grad(f)(2.0) == pytest.approx(12.0)
    recs = zymase.stats()[n:]
    assert len(recs) == 1 and recs[0].mode == "rev" and recs[0].total > 0
    assert {"numba", "AD", "optimize", "jit"} <= set(recs[0].phases)
    assert "zymase: compiled rev kernel of" in capsys.readouterr().err
    zymase.grad(f)(3.0)
    assert len(zymase.stats()) == n + 1  # one compile per function, types and activities


def test_gradient_after_the_function_ran_in_numba():
    # Numba caches its own implementations (arr.copy(), np.empty) compiled at O3 the
    # first time user code needs them; the derivative must not pick those up
    @njit
    def f(u0, nsteps):
        n = u0.shape[0]
        u = u0.copy()
        v = np.empty(n)
        for _ in range(nsteps):
            for i in range(n):
                left = u[i - 1] if i > 0 else u[i]
                v[i] = u[i] + 0.1 * left * u[i]
            u, v = v, u
        return np.sum(u * u)

    u0 = np.linspace(0.1, 0.9, 8)
    before = f(u0, 20)
    g = zymase.grad(f)(u0.copy(), 20)
    eps = 1e-6
    fd = np.array([(f.py_func(u0 + eps * e, 20) - f.py_func(u0 - eps * e, 20)) / (2 * eps) for e in np.eye(8)])
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    assert f(u0, 20) == before  # the user's compiled function is untouched


@pytest.mark.parametrize("module", ["api_outputs", "api_second_order", "api_laplacian"])
def test_transform_module_imports_before_zymase_api(module):
    # these modules import zymase.api, which used to import them back at its end: a
    # circular import when one of them was imported first
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", f"import zymase.{module}; import zymase; zymase.jacfwd"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


@njit
def _weighted(a, x, b):
    return 2.0 * a + 3.0 * b + np.sum(x * x) * a


@pytest.mark.parametrize("from_njit", [False, True])
def test_grad_follows_argnums_order(from_njit):
    # found while timing the first grad call (issue 29): with argnums
    # (2, 0) the derivatives of two float arguments came back in argument order, so
    # d/db was reported as d/da (JAX returns them in argnums' order); checked from Python
    # and from njit code, which share the glue
    x = np.array([0.5, -1.0])
    g = zymase.grad(_weighted, (2, 1, 0), cache=False)
    if from_njit:
        @njit
        def call(a, x, b):
            return g(a, x, b)

        gb, gx, ga = call(1.5, x, 0.25)
    else:
        gb, gx, ga = g(1.5, x, 0.25)
    assert (gb, ga) == (3.0, 2.0 + 1.25)
    np.testing.assert_allclose(gx, 2 * 1.5 * x, rtol=1e-15)
