"""The private unoptimized copy lowers the typing Numba computed for the user's compile
instead of typing the function again (issue 29, session 36:
frontends/numba_typing.py), and types it again where that is not sound, with the same
derivatives. Counts, not seconds (bench/numba_first_call.py measures time)."""

import math
import types
from contextlib import contextmanager

import numba
import numpy as np
import pytest
from numba import njit
from numba.core import typed_passes

import zymase
from zymase.frontends import numba as zn


@contextmanager
def _typed():
    """The qualified names of the functions Numba types (type inference) in the block."""
    seen = []
    stage = typed_passes.type_inference_stage

    def counting(typingctx, targetctx, interp, *args, **kwargs):
        seen.append(interp.func_id.func_qualname)
        return stage(typingctx, targetctx, interp, *args, **kwargs)

    typed_passes.type_inference_stage = counting
    try:
        yield seen
    finally:
        typed_passes.type_inference_stage = stage


@njit
def _weighted(y, a):
    s = 0.0
    for i in range(y.shape[0]):
        s += -y[i] * a  # a unary operator: its implementation key comes from typing
    return s


def _energy_source(x, a):
    # an njit callee, Numba @overload implementations (np.empty, arr.copy) and math
    y = np.empty(x.shape[0])
    z = x.copy()
    for i in range(x.shape[0]):
        y[i] = math.sin(z[i]) * a
    return -_weighted(y, a)


def _energy_gradient(x, a):
    """Closed form of d/d(x, a) of sum_i a^2 sin(x_i)."""
    return a * a * np.cos(x), 2.0 * a * float(np.sum(np.sin(x)))


def _fresh(py, **options):
    """A new dispatcher of ``py`` (each test its own: Numba's and zymase's caches are per
    dispatcher)."""
    return njit(**options)(types.FunctionType(py.__code__, py.__globals__, py.__name__))


@pytest.mark.parametrize("preopt", [True, False], ids=["preopt", "no-preopt"])
def test_copy_does_not_type_the_function_again(preopt):
    # issue 29: the copy ran Numba's whole pipeline, type inference included, for a
    # function the user's compile had just typed with the same argument types
    energy = _fresh(_energy_source)
    x, a = np.linspace(0.2, 1.3, 7), 0.8
    assert math.isclose(energy(x, a), energy.py_func(x, a), rel_tol=1e-14)  # the user's compile
    argtypes = (numba.typeof(x), numba.float64)
    with _typed() as seen:
        ir = zn.numba_ir(energy, argtypes)
    assert "_energy_source" not in seen and "_weighted" not in seen, seen
    assert "_weighted" in ir.text and "alwaysinline" not in ir.text  # callee linked in, unoptimized
    gx, ga = zymase.grad(energy, (0, 1), cache=False, preopt=preopt)(x, a)
    want_x, want_a = _energy_gradient(x, a)
    np.testing.assert_allclose(gx, want_x, rtol=1e-12)
    assert math.isclose(ga, want_a, rel_tol=1e-12)
    # the user's dispatcher is untouched and still runs
    assert list(energy.overloads) == [argtypes]
    assert math.isclose(energy(x, a), energy.py_func(x, a), rel_tol=1e-14)


@njit
def _inner(v):
    return v * v


_module_with_njit = types.ModuleType("_module_with_njit")
_module_with_njit.inner = _inner


def _through_module(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _module_with_njit.inner(x[i])
    return s


def _with_locals(x):
    s = 0
    for i in range(x.shape[0]):
        s += math.sin(x[i])
    return s


_SCALE = 2.0


def _scaled_square(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _SCALE * x[i] * x[i]
    return s


@pytest.mark.parametrize("case", ["not compiled yet", "module attribute", "locals", "global rebound"])
@pytest.mark.parametrize("preopt", [True, False], ids=["preopt", "no-preopt"])
def test_copy_types_again_where_the_users_typing_does_not_apply(case, preopt):
    # where lowering the user's typing is not sound (or there is none), the copy is
    # typed again as before; the derivatives are the same
    global _SCALE
    x = np.linspace(0.2, 1.3, 6)
    if case == "locals":  # the copy is compiled without the user's locals=
        f, want = _fresh(_with_locals, locals={"s": numba.float64}), np.cos(x)
    elif case == "global rebound":  # the user's compile froze the old value
        f, want = _fresh(_scaled_square), 6.0 * x
    else:  # "module attribute": the copy calls a proxy module, not the user's
        f, want = _fresh(_through_module), 2.0 * x
    if case != "not compiled yet":
        f(x)
    try:
        if case == "global rebound":
            _SCALE = 3.0  # a copy typed now sees the new value
        with _typed() as seen:
            zn.numba_ir(f, (numba.typeof(x),))
        assert f.py_func.__name__ in seen, seen
        np.testing.assert_allclose(zymase.grad(f, 0, cache=False, preopt=preopt)(x), want, rtol=1e-12)
    finally:
        _SCALE = 2.0


@njit
def _even(x, n):
    if n <= 0:
        return 1.0
    return x * _odd(x, n - 1)


@njit
def _odd(x, n):
    if n <= 0:
        return 1.0
    return x * _even(x, n - 1)


def _calls_recursion(x, n):
    return _even(x, n) + 1.0


def test_recursion_below_the_function_types_it_again():
    # Numba types recursion through its typing call stack, in which lowering the
    # user's typing has no frame: a function reaching a recursive call is typed again
    # (zymase then refuses the call through a function pointer, as before)
    f = _fresh(_calls_recursion)
    assert f(1.5, 5) == 1.5 ** 5 + 1.0
    with _typed() as seen:
        ir = zn.numba_ir(f, (numba.float64, numba.int64))
    assert "_calls_recursion" in seen and "_even" in ir.text, seen
