"""Numba's object-like and higher-order constructs under the Python transforms (session
34): ``with objmode(...)`` blocks, jitclass and structref instances, and njit functions
passed as arguments. Each is differentiated right (against a closed form, with and
without the pre-AD pipeline) or refused with one error in the user's terms; before,
an objmode block given a differentiated value had a silently zero derivative."""

import math

import numpy as np
import pytest
from numba import float64, njit, objmode, types
from numba.experimental import jitclass, structref

import zymase
from zymase.errors import ZymaseError

X = np.array([0.3, -0.7, 1.1, 0.5])
LEVELS = pytest.mark.parametrize("preopt", [True, False], ids=["preopt", "no-preopt"])


def _line_of(fn, text: str) -> int:
    """The source line of ``fn`` holding ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn.py_func)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


# ---- with objmode(...) ---------------------------------------------------------------


@njit
def _tanh_in_python(x):
    y = x[0] * 2.0
    with objmode(z="float64"):
        z = float(np.tanh(y))
    return z * x[1]


@njit
def _array_through_python(x):
    y = x * 2.0
    with objmode(z="float64[:]"):
        z = np.tanh(y)
    return np.sum(z * x)


@njit
def _sine_in_python(v):
    with objmode(r="float64"):
        r = float(np.sin(v))
    return r


@njit
def _calls_python_helper(x):
    return _sine_in_python(x[0]) * x[1] + x[2]


@LEVELS
def test_objmode_given_differentiated_values_is_refused_naming_the_block(preopt):
    # the block's result was taken as a constant: grad gave d/dx0 = 0 (true: 2 x1 (1 - tanh^2))
    line = _line_of(_tanh_in_python, "with objmode")
    for call in (lambda: zymase.grad(_tanh_in_python, preopt=preopt)(X.copy()),
                 lambda: zymase.value_and_grad(_tanh_in_python, preopt=preopt)(X.copy()),
                 lambda: zymase.jvp(_tanh_in_python, (X,), (np.ones(4),), preopt=preopt)):
        with pytest.raises(ZymaseError) as info:
            call()
        text = info.value.format()
        assert text.startswith(f"zymase: error: {__file__}:{line}: '") and "with objmode(...)' block (line " \
            f"{line})" in text and "_tanh_in_python" in text and "\n" not in text, text
    line = _line_of(_array_through_python, "with objmode")
    with pytest.raises(ZymaseError, match=rf"test_object_constructs.py:{line}: .*objmode"):
        zymase.grad(_array_through_python, preopt=preopt)(X.copy())


@LEVELS
def test_objmode_in_a_callee_is_refused_naming_the_callee(preopt):
    line = _line_of(_sine_in_python, "with objmode")
    with pytest.raises(ZymaseError) as info:
        zymase.grad(_calls_python_helper, preopt=preopt)(X.copy())
    text = info.value.format()
    assert f"(line {line} of '" in text and "_sine_in_python', which it calls)" in text, text


@njit
def _constant_from_python(v):
    with objmode(r="float64"):
        r = 2.5
    return r * v


@njit
def _calls_constant_python(x):
    return _constant_from_python(x[0]) * x[1]


@njit
def _constants_in_and_out(x):
    n = x.shape[0]
    with objmode(c="float64", w="float64[:]"):
        c = 0.5 * n
        w = np.linspace(0.0, 1.0, n)
    return c * np.sum(w * x * x)


@LEVELS
def test_objmode_on_constants_differentiates(preopt):
    # an objmode block in an inlined callee crashed the call ("missing Environment": the
    # callee copy's Environment, held weakly by Numba, was collected before the kernel ran)
    if not preopt:
        # the unoptimized code's memory analysis takes the arrays crossing the block as
        # active: refused, in objmode's terms (before: NRT_adapt_ndarray_from_python)
        line = _line_of(_constants_in_and_out, "with objmode")
        with pytest.raises(ZymaseError, match=rf"test_object_constructs.py:{line}: .*'with objmode\(\.\.\.\)' "
                           r"block \(line \d+\).*keep the default preopt=True"):
            zymase.grad(_constants_in_and_out, preopt=False)(X.copy())
    want = np.array([2.5 * X[1], 2.5 * X[0], 0.0, 0.0])
    np.testing.assert_allclose(zymase.grad(_calls_constant_python, preopt=preopt)(X.copy()), want, rtol=1e-13)
    t = np.array([0.2, -1.0, 0.4, 0.3])
    assert zymase.jvp(_calls_constant_python, (X,), (t,), preopt=preopt)[1] == pytest.approx(want @ t, rel=1e-13)
    if preopt:
        want = 0.5 * 4 * np.linspace(0.0, 1.0, 4) * 2 * X
        np.testing.assert_allclose(zymase.grad(_constants_in_and_out)(X.copy()), want, rtol=1e-13)


@njit
def _prints(x):
    y = np.sum(x * x)
    print("value", y, x[0])
    return y


def test_printing_differentiated_values_is_kept(capfd):
    # print boxes values too, but calls no Python code: not an objmode block
    np.testing.assert_allclose(zymase.grad(_prints)(X.copy()), 2 * X, rtol=1e-14)
    assert "value" in capfd.readouterr().out


# ---- jitclass and structref ------------------------------------------------------------


@jitclass([("w", float64[:]), ("b", float64)])
class _Params:
    def __init__(self, w, b):
        self.w = w
        self.b = b

    def apply(self, x):
        s = self.b
        for i in range(x.shape[0]):
            s += self.w[i] * x[i] * x[i]
        return s


@njit
def _params_of_x(x):
    p = _Params(x * 2.0, x[0])
    return p.apply(x)


@njit
def _params_of_constants(x):
    p = _Params(np.array([1.0, 2.0, 0.5, -1.0]), 0.25)
    return p.apply(x)


@structref.register
class _PairType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class _Pair(structref.StructRefProxy):
    def __new__(cls, v, c):
        return structref.StructRefProxy.__new__(cls, v, c)


structref.define_proxy(_Pair, _PairType, ["v", "c"])


@njit
def _pair_of_x(x):
    s = _Pair(x * 2.0, x[0])
    return np.sum(s.v * x) * s.c


@njit
def _with_params(x, p):
    return p.apply(x)


@LEVELS
def test_instances_holding_differentiated_values_are_refused_in_python_terms(preopt):
    # before: "active data is written through a pointer produced by 'call
    # @NRT_MemInfo_alloc_dtor'" with "compile with debug=True" for a line
    for fn, kind, cls, made in ((_params_of_x, "jitclass", "_Params", "_Params("),
                                (_pair_of_x, "structref", "_Pair", "_Pair(")):
        line = _line_of(fn, made)
        with pytest.raises(ZymaseError) as info:
            zymase.grad(fn, preopt=preopt)(X.copy())
        text = info.value.format()
        kind = "jitclass holding arrays or other objects" if kind == "jitclass" else kind
        assert text.startswith(f"zymase: error: {__file__}:{line}: ") and \
            f"in the fields of a {kind} instance ({cls}, line {line})" in text and "\n" not in text, text


def test_instance_of_constants_made_inside_differentiates():
    want = 2 * np.array([1.0, 2.0, 0.5, -1.0]) * X
    np.testing.assert_allclose(zymase.grad(_params_of_constants)(X.copy()), want, rtol=1e-14)
    t = np.array([0.2, -1.0, 0.4, 0.3])
    assert zymase.jvp(_params_of_constants, (X,), (t,))[1] == pytest.approx(want @ t, rel=1e-13)
    # without the pre-AD pipeline Numba's unoptimized code is refused, saying so
    with pytest.raises(ZymaseError, match=r"other objects instance \(_Params, line \d+\).*preopt=True"):
        zymase.grad(_params_of_constants, preopt=False)(X.copy())


@jitclass([("a", float64), ("b", float64), ("calls", types.int64)])
class _Scalars:
    def __init__(self, a, b):
        self.a = a
        self.b = b
        self.calls = 0

    def scale(self, c):
        self.a *= c
        self.calls += 1

    def value(self):
        return self.a * self.b + math.sin(self.a)


@njit
def _scalars_of_x(x):
    p = _Scalars(2.0 * x[0], x[1])
    p.scale(x[2])
    return p.value()


@njit
def _new_scalars(v):
    return _Scalars(v, v * v)


@njit
def _scalars_per_element(x):
    s = 0.0
    for i in range(x.shape[0]):
        p = _new_scalars(x[i])  # made in a callee, one per iteration
        if x[i] > 0.0:
            p.scale(1.5)
        s += p.value()
    return s


def test_jitclass_of_numbers_is_differentiated():
    # its destructor releases nothing: its MemInfo gets a shadow like an array's (before:
    # refused as "active data is written through a pointer produced by 'call
    # @NRT_MemInfo_alloc_dtor'")
    a = 2.0 * X[0] * X[2]
    da = np.array([2.0 * X[2], 0.0, 2.0 * X[0], 0.0])  # d(a)/dx
    want = (X[1] + math.cos(a)) * da + np.array([0.0, a, 0.0, 0.0])
    np.testing.assert_allclose(zymase.grad(_scalars_of_x)(X.copy()), want, rtol=1e-13)
    t = np.array([0.2, -1.0, 0.4, 0.3])
    assert zymase.jvp(_scalars_of_x, (X,), (t,))[1] == pytest.approx(want @ t, rel=1e-13)
    np.testing.assert_allclose(zymase.vjp(_scalars_of_x, X)[1](1.0)[0], want, rtol=1e-13)
    c = np.where(X > 0, 1.5, 1.0)
    want = 3 * c * X ** 2 + c * np.cos(c * X)  # of c x^3 + sin(c x) per element
    np.testing.assert_allclose(zymase.grad(_scalars_per_element)(X.copy()), want, rtol=1e-13)
    hessian = zymase.hessian(_scalars_per_element)(X.copy())
    np.testing.assert_allclose(hessian, np.diag(6 * c * X - c ** 2 * np.sin(c * X)), rtol=1e-12, atol=1e-14)


def test_instance_arguments_are_refused_by_kind():
    p = _Params(X.copy(), 0.5)  # its field is the very array differentiated: not a constant
    with pytest.raises(ZymaseError, match=r"argument 1 \('p'\) \(a _Params\) is a jitclass instance.*"
                       r"hint: pass its fields instead"):
        zymase.grad(_with_params)(X, p)


# ---- njit functions as arguments -------------------------------------------------------


@njit
def _square(v):
    return v * v


@njit
def _sine(v):
    return math.sin(v)


@njit
def _mapped_sum(fn, x):
    s = 0.0
    for i in range(x.shape[0]):
        s += fn(x[i])
    return s


@njit
def _twice_mapped(x, fn):
    return 2.0 * _mapped_sum(fn, x)


@LEVELS
def test_njit_function_argument_is_a_constant(preopt):
    # was refused: "has Numba type type(CPUDispatcher(...)), which zymase cannot
    # differentiate through"; Numba compiles one specialization per function passed
    for fn, want in ((_sine, 2 * np.cos(X)), (_square, 4 * X)):
        np.testing.assert_allclose(zymase.grad(_twice_mapped, preopt=preopt)(X.copy(), fn), want, rtol=1e-14)
        t = np.array([0.2, -1.0, 0.4, 0.3])
        assert zymase.jvp(_twice_mapped, (X, fn), (t, None), preopt=preopt)[1] == pytest.approx(want @ t, rel=1e-13)
        gx, gfn = zymase.vjp(_twice_mapped, X, fn, preopt=preopt)[1](1.0)
        np.testing.assert_allclose(gx, want, rtol=1e-14)
        assert gfn is None
    np.testing.assert_allclose(zymase.hessian(_twice_mapped)(X.copy(), _square), 4 * np.eye(4), rtol=1e-14)
    with pytest.raises(ZymaseError, match=r"cannot differentiate with respect to argument 1 \('fn'\)"):
        zymase.grad(_twice_mapped, argnums=1)(X.copy(), _sine)


def test_disk_key_covers_the_code_of_a_function_argument():
    # the argument's type names the function by name and address only: an edited
    # function at the same address must not find the old kernel on disk
    import numba

    from zymase.frontends import numba as zn

    @njit
    def fn(v):
        return v * v

    def other(v):
        return v * v * v

    argtypes = (numba.typeof(X), numba.typeof(fn))
    before = zn._disk_key(_twice_mapped, argtypes, None)
    fn.py_func.__code__ = other.__code__
    assert zn._disk_key(_twice_mapped, argtypes, None) != before


# ---- compiled functions called through pointers ----------------------------------------


def _libm_cos():
    import ctypes

    cos = ctypes.CDLL("libm.so.6").cos
    cos.restype, cos.argtypes = ctypes.c_double, (ctypes.c_double,)
    return cos


c_cos = _libm_cos()


@njit
def _through_ctypes(x):
    return c_cos(x[0]) * x[1]


@njit
def _ctypes_on_a_constant(x):
    return c_cos(0.5) * np.sum(x * x)


@LEVELS
def test_ctypes_call_on_differentiated_values_is_refused_naming_it(preopt):
    # before: "a call through a function pointer, as Numba compiles the call of a
    # recursive njit function ...", with "write the recursion as a loop"
    line = _line_of(_through_ctypes, "c_cos(")
    with pytest.raises(ZymaseError) as info:
        zymase.grad(_through_ctypes, preopt=preopt)(X.copy())
    text = info.value.format()
    assert text.startswith(f"zymase: error: {__file__}:{line}: ") and "ctypes or @cfunc function pointer " \
        f"(c_cos, line {line})" in text and "recursion" not in text, text
    np.testing.assert_allclose(zymase.grad(_ctypes_on_a_constant, preopt=preopt)(X.copy()), 2 * math.cos(0.5) * X,
                               rtol=1e-14)


@njit
def _cubes(x):
    return np.sum(x ** 3)


@njit
def _dotted_with(x, derivative):
    return np.sum(derivative(x) * x)


@LEVELS
def test_transform_passed_as_an_argument_is_differentiated(preopt):
    # grad(f) and hessian(f) objects are njit functions to Numba: passed as an argument,
    # the derivative of the caller is taken through them (reverse over reverse, forward
    # over reverse); was refused as an argument type
    grad = zymase.grad(_cubes)
    # d/dx sum(3 x^2 * x) = 9 x^2
    np.testing.assert_allclose(zymase.grad(_dotted_with, preopt=preopt)(X.copy(), grad), 9 * X ** 2, rtol=1e-14)
    t = np.array([0.2, -1.0, 0.4, 0.3])
    assert zymase.jvp(_dotted_with, (X, grad), (t, None), preopt=preopt)[1] == pytest.approx(9 * X ** 2 @ t, rel=1e-13)


def test_disk_key_covers_a_transform_passed_as_an_argument():
    import numba

    from zymase.frontends import numba as zn

    @njit
    def g(x):
        return np.sum(x ** 3)

    def other(x):
        return np.sum(x ** 4)

    argtypes = (numba.typeof(X), numba.typeof(zymase.grad(g)))
    before = zn._disk_key(_dotted_with, argtypes, None)
    g.py_func.__code__ = other.__code__
    assert zn._disk_key(_dotted_with, argtypes, None) != before


def test_jitclass_of_numbers_frees_its_shadows():
    # every instance's shadow MemInfo is released, in reverse, forward and second order
    from numba.core.runtime import _nrt_python, rtsys

    derivatives = (lambda: zymase.grad(_scalars_per_element)(X.copy()),
                   lambda: zymase.jvp(_scalars_per_element, (X,), (X,)),
                   lambda: zymase.hessian(_scalars_per_element)(X.copy()))
    for call in derivatives:
        call()
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(10):
            for call in derivatives:
                call()
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert after.mi_alloc - before.mi_alloc > 0  # the instances are counted
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
    assert after.alloc - before.alloc == after.free - before.free


@njit
def _prints_from_python(x):
    y = np.sum(x * x)
    with objmode():
        print("objmode value", y)
    return y


def test_objmode_block_that_only_prints_is_kept(capfd):
    # nothing comes back from the Python code: the derivative is the function's own
    # (an array handed over stays refused: the Python code could write into it)
    np.testing.assert_allclose(zymase.grad(_prints_from_python)(X.copy()), 2 * X, rtol=1e-14)
    assert "objmode value" in capfd.readouterr().out
