"""The first ``zymase.grad`` call does no compile work it does not need (issue 29, the
first-call target): the private unoptimized copy of the user's function is compiled
only to IR (no machine code, no Python or C-callable wrappers), the glue zymase
generates has no C-callable wrapper, and Numba compiles and runs the user's code
normally afterwards. Counts, not seconds (bench/numba_first_call.py measures time)."""

import math
from contextlib import contextmanager

import numba
import numpy as np
from numba import njit
from numba.core import codegen, lowering

import zymase
from zymase.frontends import numba as zn


@njit
def _scaled_sum(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += a * x[i]
    return s


@njit
def _energy(x, a):
    y = x.copy()  # a Numba @overload (array.copy), recompiled unoptimized for the copy
    for i in range(y.shape[0]):
        y[i] = math.sin(y[i]) * a
    return _scaled_sum(y, a) + np.sum(y * y)


@contextmanager
def _counting():
    """The code libraries Numba emits machine code for and the functions it gives a
    Python (cpython) or C-callable (cfunc) wrapper, while the block runs (qualified names)."""
    seen = {"machine code": [], "cpython": [], "cfunc": []}
    finalize, cpython, cfunc = (codegen.JITCodeLibrary._finalize_specific, lowering.Lower.create_cpython_wrapper,
                                lowering.Lower.create_cfunc_wrapper)

    def count_finalize(library):
        seen["machine code"].append(library.name)
        return finalize(library)

    def count_cpython(lower, *args, **kwargs):
        seen["cpython"].append(lower.fndesc.qualname)
        return cpython(lower, *args, **kwargs)

    def count_cfunc(lower, *args, **kwargs):
        seen["cfunc"].append(lower.fndesc.qualname)
        return cfunc(lower, *args, **kwargs)

    codegen.JITCodeLibrary._finalize_specific = count_finalize
    lowering.Lower.create_cpython_wrapper = count_cpython
    lowering.Lower.create_cfunc_wrapper = count_cfunc
    try:
        yield seen
    finally:
        codegen.JITCodeLibrary._finalize_specific = finalize
        lowering.Lower.create_cpython_wrapper = cpython
        lowering.Lower.create_cfunc_wrapper = cfunc


def test_private_copy_is_compiled_to_ir_only_and_numba_still_works():
    # issue 29 (first grad call): the private copy was compiled to machine code with both
    # wrappers, for the function, its njit callee and Numba's overloads, and never run
    x = np.linspace(0.2, 1.3, 9)
    expected = _energy.py_func(x, 0.7)
    assert _energy(x, 0.7) == expected  # the user's own compile, as before a grad
    argtypes = (numba.typeof(x), numba.float64)
    with _counting() as seen:
        ir = zn.numba_ir(_energy, argtypes)
    # (Numba's own @overload implementations the copy needs are compiled as Numba does)
    for what, names in seen.items():
        assert not {"_energy", "_scaled_sum"} & set(names), (what, names)
    # the copy's IR is complete: the callee and the overload are linked in, unoptimized
    assert "_scaled_sum" in ir.text and "alwaysinline" not in ir.text
    # and differentiates correctly (closed form: d/da of sum(a sin x_i) (a + a sin x_i))
    g = zymase.grad(_energy, 1, cache=False)(x, 0.7)
    s = np.sin(x)
    assert math.isclose(g, float(np.sum(2 * 0.7 * s + 2 * 0.7 * s * s)), rel_tol=1e-12)

    # Numba afterwards: the user's dispatchers untouched, new functions using the same
    # overloads and callee compile to working machine code
    assert _energy(x, 0.7) == expected
    assert list(_energy.overloads) == [argtypes]

    @njit
    def again(x, a):
        return _scaled_sum(x.copy(), a) + np.sum(x * x)

    assert math.isclose(again(x, 0.7), _scaled_sum.py_func(x, 0.7) + float(np.sum(x * x)), rel_tol=1e-14)


def test_generated_glue_has_no_c_callable_wrapper():
    # issue 29 (first grad call): the overload implementation behind grad's trampoline
    # and the private copy were each given a cfunc wrapper that nothing calls; only the
    # trampoline, which njit code may take as a first-class function, keeps its own
    @njit
    def product(a, b):
        return a * math.exp(b)

    assert product(0.5, 0.25) == 0.5 * math.exp(0.25)
    g = zymase.grad(product, (0, 1), cache=False)
    with _counting() as seen:
        ga, gb = g(0.5, 0.25)
    assert (ga, gb) == (math.exp(0.25), 0.5 * math.exp(0.25))
    assert seen["cfunc"] == [g.trampoline.py_func.__qualname__], seen
    assert seen["cpython"] == [g.trampoline.py_func.__qualname__], seen
    assert product.py_func.__qualname__ not in seen["machine code"], seen

