"""The same array passed as two arguments (session 25's hunt for silent wrong derivatives).

``f(x, x)`` where ``f`` writes through one argument and reads the other: before, ``grad``
gave each argument its own shadow and ``jvp``/``vjp``/the Jacobians ran ``f`` on a copy
of each, so the writes through one were not seen through the other: for
``y[i] = x[i] * y[i] + 1; return sum(y * x)`` at x = linspace(0.3, 1.2, 4), grad's two
partials summed to [1.744, 2.992, ...] against the true [1.308, 3.264, ...], and jvp
along ones gave 12.1 against 22.8 (hessian, hvp and jacfwd(grad(f)) took the two as
distinct arrays too). Such calls are refused now. A function that only
reads both (a kernel matrix ``k(X, X)``) keeps working: its partials are well defined.
"""

import numpy as np
import pytest
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def scale_into(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * y[i] + 1.0
    return np.sum(y * x)


@njit
def reads_both(x, y):
    return np.sum(x * y * y)


X0 = np.linspace(0.3, 1.2, 4)


@pytest.mark.parametrize("entry", ["grad", "jvp", "vjp", "jacrev", "hessian"])
def test_writing_through_an_aliased_argument_is_refused(entry):
    x = X0.copy()
    calls = {
        "grad": lambda: zymase.grad(scale_into, argnums=(0, 1))(x, x),
        "jvp": lambda: zymase.jvp(scale_into, (x, x), (np.ones(4), np.ones(4))),
        "vjp": lambda: zymase.vjp(scale_into, x, x),
        "jacrev": lambda: zymase.jacrev(scale_into)(x, x),
        "hessian": lambda: zymase.hessian(scale_into)(x, x),
    }
    with pytest.raises(ZymaseError) as info:
        calls[entry]()
    msg = info.value.format()
    assert msg.startswith("zymase: error: ")
    assert "argument 0 ('x') and argument 1 ('y') share memory" in msg and "'scale_into'" in msg
    # the line of the write, y[i] = x[i] * y[i] + 1.0 (co_firstlineno is the decorator's)
    assert f"{__file__}:{scale_into.py_func.__code__.co_firstlineno + 3}" in msg
    # distinct arrays are differentiated as before
    if entry == "grad":
        gx, gy = zymase.grad(scale_into, argnums=(0, 1))(X0.copy(), X0.copy())
        np.testing.assert_allclose(gx, X0 * X0 + (X0 * X0 + 1), rtol=1e-12)
        np.testing.assert_allclose(gy, X0 * X0, rtol=1e-12)


def test_reading_an_aliased_argument_twice_is_right():
    x = X0.copy()
    gx, gy = zymase.grad(reads_both, argnums=(0, 1))(x, x)
    # the total derivative of sum(x**3) is the sum of the partials
    np.testing.assert_allclose(gx + gy, 3 * X0 * X0, rtol=1e-12)
    np.testing.assert_allclose(gx, X0 * X0, rtol=1e-12)
    _, d = zymase.jvp(reads_both, (x, x), (np.ones(4), np.ones(4)))
    np.testing.assert_allclose(d, np.sum(3 * X0 * X0), rtol=1e-12)


_grad_both = zymase.grad(scale_into, argnums=(0, 1))


@njit
def _calls_grad(x, y):
    gx, gy = _grad_both(x, y)
    return np.sum(gx) + np.sum(gy)


def test_njit_code_calling_grad_with_one_array_twice():
    # the glue raises the same ZymaseError (its one argument: the message and hint)
    with pytest.raises(ZymaseError, match=r"^zymase: error: .*argument 0 \('x'\) and argument 1 \('y'\) share memory"):
        x = X0.copy()
        _calls_grad(x, x)
    # distinct arrays, and views of one array that do not overlap, are differentiated
    a = np.concatenate([X0, X0])
    want = np.sum(X0 * X0 + (X0 * X0 + 1)) + np.sum(X0 * X0)
    assert _calls_grad(X0.copy(), X0.copy()) == pytest.approx(want, rel=1e-12)
    assert _calls_grad(a[:4], a[4:]) == pytest.approx(want, rel=1e-12)


# -- session 26: tuples of arrays in njit glue, the other transforms called from njit
# code, and autodiff/fwddiff with caller-given shadows. Each call below gave a wrong
# number before, silently: grad of scale_pair((x, x)) from njit code [1.744, 2.992, ...]
# against the true d/dx sum((x*x + 1)**2) = 4x**3 + 4x = [1.308, 3.264, ...]; hessian
# from njit code diag(0.6, 2.72, 8.55, 98.7) against diag(12x**2 + 4); hvp [0.6, 1.2,
# ...]; jvp from njit code 12.1 against 22.8; autodiff with two shadows the partials'
# sum [1.744, ...], with one shadow for two distinct arrays [0.834, 2.352, ...] against
# [1.27, 2.08, ...]; fwddiff 18.1 against 22.8.

@njit
def scale_pair(t):
    x, y = t
    for i in range(x.shape[0]):
        y[i] = x[i] * y[i] + 1.0
    return np.sum(y * x)


@njit
def reads_pair(t):
    return np.sum(t[0] * t[1] * t[1])


_grad_pair = zymase.grad(scale_pair)
_grad_reads_pair = zymase.grad(reads_pair)
_hessian = zymase.hessian(scale_into)
_hvp = zymase.hvp(scale_into)


@njit
def _pair_grad(a, b):
    g = _grad_pair((a, b))
    return g[0] + g[1]


@njit
def _reads_pair_grad(a, b):
    g = _grad_reads_pair((a, b))
    return g[0] + g[1]


@njit
def _second_orders(a, b, v):
    return _hessian(a, b), _hvp(a, b, v), zymase.jvp(scale_into, (a, b), (v, v))[1]


def _write_line(fn, offset):
    return f"{__file__}:{fn.py_func.__code__.co_firstlineno + offset}"


def test_njit_code_passing_a_tuple_of_overlapping_arrays_is_refused():
    x = X0.copy()
    with pytest.raises(ZymaseError) as info:
        _pair_grad(x, x)
    msg = info.value.format()
    assert msg.startswith("zymase: error: ")
    assert "grad of 'scale_pair': argument 0 ('t')[0] and argument 0 ('t')[1] share memory" in msg
    assert _write_line(scale_pair, 4) in msg
    a = np.concatenate([X0, X0])
    with pytest.raises(ZymaseError, match="share memory"):
        _pair_grad(a[:5], a[3:])
    # views that do not overlap, and reading both, are differentiated
    want = (X0 * X0 + (X0 * X0 + 1)) + X0 * X0
    np.testing.assert_allclose(_pair_grad(a[:4], a[4:]), want, rtol=1e-12)
    np.testing.assert_allclose(_reads_pair_grad(x, x), 3 * X0 * X0, rtol=1e-12)


def test_njit_code_calling_hessian_hvp_jvp_with_one_array_twice_is_refused():
    x, v = X0.copy(), np.ones(4)
    with pytest.raises(ZymaseError) as info:
        _second_orders(x, x, v)
    msg = info.value.format()
    assert "hessian of 'scale_into': argument 0 ('x') and argument 1 ('y') share memory" in msg
    assert _write_line(scale_into, 3) in msg
    for api in ("hvp", "jvp"):  # each check on its own (the glue raises the first)
        call = {"hvp": lambda: _hvp_only(x, x, v), "jvp": lambda: _jvp_only(x, x, v)}[api]
        with pytest.raises(ZymaseError, match=rf"{api} of 'scale_into': argument 0 \('x'\) and argument 1"):
            call()


def test_njit_code_calling_hessian_of_a_function_writing_an_argument():
    # scale_into(x, y) = sum(x*x*y + x) with distinct arrays: its Hessian in x is
    # diag(2y). The glue called f once per column on the same arrays, so every column
    # after the first was taken where f's writes had moved y: diag(2.4, 3.08, 4.77, 8.32)
    # against diag(2.4, 1.8, 1.2, 0.6) (f runs on copies now, as from Python)
    v = np.ones(4)
    y = X0[::-1].copy()
    yc = y.copy()
    h, hv, d = _second_orders(X0.copy(), yc, v)
    np.testing.assert_array_equal(yc, y)  # f ran on copies
    np.testing.assert_allclose(h, np.diag(2 * y), rtol=1e-12)
    np.testing.assert_allclose(hv, 2 * y, rtol=1e-12)
    # jvp along (1, 1): d/de sum((x+e)^2 (y+e) + (x+e)) = sum(2xy + x^2 + 1)
    assert d == pytest.approx(np.sum(2 * X0 * y + X0 * X0 + 1), rel=1e-12)


@njit
def _hvp_only(a, b, v):
    return _hvp(a, b, v)


@njit
def _jvp_only(a, b, v):
    return zymase.jvp(scale_into, (a, b), (v, v))[1]


def test_autodiff_and_fwddiff_refuse_overlapping_arrays_they_write():
    from zymase import Duplicated

    x = X0.copy()
    for shadows in ((np.zeros(4), np.zeros(4)), (lambda s: (s, s))(np.zeros(4))):
        with pytest.raises(ZymaseError) as info:
            zymase.autodiff(scale_into, Duplicated(x, shadows[0]), Duplicated(x, shadows[1]))
        msg = info.value.format()
        assert "autodiff of 'scale_into': argument 0 ('x') and argument 1 ('y') share memory" in msg
        assert _write_line(scale_into, 3) in msg
    with pytest.raises(ZymaseError, match=r"fwddiff of 'scale_into': argument 0 \('x'\) and argument 1"):
        zymase.fwddiff(scale_into, Duplicated(x, np.ones(4)), Duplicated(x, np.ones(4)))
    # one shadow for two distinct arrays, one of them written
    dx = np.zeros(4)
    with pytest.raises(ZymaseError, match=r"the shadow of argument 0 \('x'\) and the shadow of argument 1 "
                       r"\('y'\) share memory"):
        zymase.autodiff(scale_into, Duplicated(X0.copy(), dx), Duplicated(X0.copy(), dx))
    # distinct arrays and shadows: the partials
    dx, dy = np.zeros(4), np.zeros(4)
    zymase.autodiff(scale_into, Duplicated(X0.copy(), dx), Duplicated(X0.copy(), dy))
    np.testing.assert_allclose(dx, 2 * X0 * X0 + 1, rtol=1e-12)
    np.testing.assert_allclose(dy, X0 * X0, rtol=1e-12)


def test_autodiff_and_fwddiff_of_a_function_reading_one_array_twice():
    from zymase import Duplicated

    x = X0.copy()
    dx, dy = np.zeros(4), np.zeros(4)
    zymase.autodiff(reads_both, Duplicated(x, dx), Duplicated(x, dy))
    np.testing.assert_allclose(dx + dy, 3 * X0 * X0, rtol=1e-12)
    shared = np.zeros(4)  # one shadow for both: the partials added in it
    zymase.autodiff(reads_both, Duplicated(x, shared), Duplicated(x, shared))
    np.testing.assert_allclose(shared, 3 * X0 * X0, rtol=1e-12)
    t = np.ones(4)
    assert zymase.fwddiff(reads_both, Duplicated(x, t), Duplicated(x, t)) == pytest.approx(np.sum(3 * X0 * X0))


@njit
def running_product(x):
    for i in range(1, x.shape[0]):
        x[i] *= x[i - 1] * 0.5 + 1.0
    return np.sum(x * x)


_hvp_running = zymase.hvp(running_product)


@njit
def _newton_direction(x, v):
    return _hvp_running(x, v)


def test_njit_code_calling_hvp_keeps_its_vector():
    # hvp called from njit code passed the caller's vector as the tangent of x, which
    # running_product writes: the vector came back overwritten (the result was right)
    v = np.linspace(-1.0, 1.0, 4)
    want = _hvp_running(X0.copy(), v.copy())  # from Python: f runs on copies
    got = _newton_direction(X0.copy(), v)
    np.testing.assert_array_equal(v, np.linspace(-1.0, 1.0, 4))
    np.testing.assert_allclose(got, want, rtol=1e-12)
