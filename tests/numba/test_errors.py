"""Every error path of the Python API: one clear ZymaseError naming the argument or
construct, never a crash or a wrong derivative; and Numba's own exceptions raised in
the differentiated function propagate unchanged."""

import math

import numba
import numpy as np
import pytest
from numba import njit

import zymase
from zymase import Active, Const, Duplicated
from zymase.errors import ZymaseError


@njit
def loss(x, a):
    return a * np.sum(x * x)


X = np.linspace(0.1, 1.0, 5)


def _raises(match):
    return pytest.raises(ZymaseError, match=r"^zymase: error: .*" + match)


def test_object_mode_function():
    @numba.jit(forceobj=True)
    def f(x):
        return x * 2.0

    with _raises("object mode"):
        zymase.grad(f)


def test_not_a_function():
    with _raises("must be a @numba.njit function"):
        zymase.grad(42)


def test_unsupported_python_construct_names_the_line():
    @njit
    def f(x):
        d = {}
        d[object()] = x  # Numba cannot type an object() key
        return x

    with _raises("Numba cannot compile 'test_unsupported_python_construct_names_the_line.<locals>.f'") as info:
        zymase.grad(f)(1.0)
    assert "test_errors.py:" in str(info.value)


def test_active_on_array():
    with _raises(r"Active\(ndarray\) on argument 0 \('x'\): only float scalars can be Active"):
        zymase.autodiff(loss, Active(X.copy()), Active(1.0))


def test_active_on_integer():
    @njit
    def f(x, n):
        return x * n

    with _raises(r"Active\(int\) on argument 1 \('n'\)"):
        zymase.autodiff(f, Active(1.0), Active(3))


def test_shadow_shape_mismatch():
    with _raises(r"shadow of argument 0 \('x'\) has shape \(4,\) .* array has shape \(5,\)"):
        zymase.autodiff(loss, Duplicated(X.copy(), np.zeros(4)), Active(1.0))


def test_shadow_dtype_mismatch():
    with _raises(r"shadow of argument 0 \('x'\) .*dtype float32.*dtype float64"):
        zymase.autodiff(loss, Duplicated(X.copy(), np.zeros(5, np.float32)), Active(1.0))


def test_shadow_not_an_array():
    with _raises(r"shadow of argument 0 \('x'\) is float, not an array"):
        zymase.autodiff(loss, Duplicated(X.copy(), 0.0), Active(1.0))


def test_shadow_sharing_memory_with_a_primal():
    @njit
    def f(x, y):
        return np.sum(x * y)

    x = X.copy()
    with _raises(r"the shadow of argument 0 \('x'\) shares memory with argument 0 \('x'\)"):
        zymase.autodiff(loss, Duplicated(x, x), Active(1.0))
    buf = np.zeros(10)
    with _raises(r"the shadow of argument 0 \('x'\) shares memory with argument 1 \('y'\)"):
        zymase.autodiff(f, Duplicated(x, buf[:5]), Const(buf[3:8]))
    with _raises(r"the shadow of argument 1 \('y'\) shares memory with argument 0 \('x'\)"):
        zymase.fwddiff(f, Duplicated(buf[5:], np.ones(5)), Duplicated(x, buf[5:]))
    # disjoint halves of one buffer are fine
    dx = np.zeros(5)
    zymase.autodiff(f, Duplicated(buf[:5], dx), Const(buf[5:]))


def test_grad_needs_float_result():
    @njit
    def f(x):
        return x.copy()

    with _raises("grad needs .* to return a float, but it returns array"):
        zymase.grad(f)(X.copy())


def test_grad_of_integer_result():
    @njit
    def f(a):
        return int(a)

    with _raises("returns int64"):
        zymase.grad(f)(1.5)


def test_grad_with_respect_to_integer():
    @njit
    def f(x, n):
        return x * n

    with _raises(r"cannot differentiate with respect to argument 1 \('n'\), which has type int64"):
        zymase.grad(f, argnums=1)(1.0, 3)


def test_argnums_out_of_range():
    with _raises("argnums 5 is out of range for a function of 2 arguments"):
        zymase.grad(loss, argnums=5)


def test_wrong_number_of_arguments():
    with _raises("takes 2 arguments, got 1"):
        zymase.grad(loss)(X.copy())


def test_non_contiguous_array():
    with _raises(r"argument 0 \('x'\) is a non-contiguous array"):
        zymase.grad(loss)(np.linspace(0, 1, 10)[::2], 1.0)


@njit
def _matrix_sum(A, pair):
    return np.sum(A * A) + np.sum(pair[1])


def test_non_contiguous_array_hint_names_the_argument():
    # session 32: the hint said np.ascontiguousarray(x) whatever the argument's name
    with _raises(r"argument 0 \('A'\) is a non-contiguous array .*hint: pass np\.ascontiguousarray\(A\)"):
        zymase.grad(_matrix_sum)(np.ones((3, 4)).T, (np.ones(2), np.ones(2)))
    with _raises(r"argument 1 \('pair'\)\[1\] is a non-contiguous .*np\.ascontiguousarray\(pair\[1\]\)"):
        zymase.grad(_matrix_sum)(np.ones((3, 4)), (np.ones(2), np.ones(4)[::2]))


def test_integer_array_cannot_be_differentiated():
    with _raises("cannot differentiate with respect to argument 0"):
        zymase.grad(loss)(np.arange(5), 1.0)


def test_const_array_written_with_active_data():
    @njit
    def f(x, a):
        for i in range(x.shape[0]):
            x[i] *= a
        return x.sum()

    with _raises(r"writes differentiated values into argument 0 \('x'\), which is constant.*Duplicated"):
        zymase.autodiff(f, Const(X.copy()), Active(2.0))


def test_forward_mode_rejects_active():
    with _raises("Active on argument 1 .* in forward mode"):
        zymase.fwddiff(loss, Const(X.copy()), Active(1.0))


def test_jvp_length_mismatch():
    with _raises("jvp got 2 primals but 1 tangents"):
        zymase.jvp(loss, (X, 1.0), (np.ones(5),))


def test_unsupported_argument_type():
    with _raises(r"argument 0 \('x'\) \(a str\) has Numba type unicode_type"):
        zymase.grad(loss)("abc", 1.0)


# --- Numba's exceptions in the differentiated function --------------------------------


def test_bounds_check_raises_index_error():
    @njit(boundscheck=True)
    def f(x, n):
        s = 0.0
        for i in range(n):
            s += x[i] * x[i]
        return s

    assert zymase.grad(f)(X.copy(), 5) == pytest.approx(2 * X)
    with pytest.raises(IndexError):
        zymase.grad(f)(X.copy(), 6)


def test_python_error_model_raises_zero_division():
    @njit(error_model="python")
    def f(x, a):
        return np.sum(x) / a

    assert zymase.grad(f, argnums=1)(X.copy(), 2.0) == pytest.approx(-np.sum(X) / 4)
    with pytest.raises(ZeroDivisionError):
        zymase.grad(f, argnums=1)(X.copy(), 0.0)


def test_user_exception_propagates_from_grad_and_jvp():
    @njit
    def f(x, a):
        if a < 0:
            raise ValueError("a must be non-negative")
        return a * x.sum()

    with pytest.raises(ValueError, match="non-negative"):
        zymase.grad(f, argnums=1)(X.copy(), -1.0)
    with pytest.raises(ValueError, match="non-negative"):
        zymase.jvp(f, (X, -1.0), (np.ones(5), 1.0))


def test_recursion_is_an_error_not_an_abort():
    # Numba passes pointers (retptr, excinfo) to every call, so a recursive function is
    # differentiated in split mode, whose tape is thread-local; Numba's JIT (MCJIT) cannot
    # allocate TLS and would abort the process
    @njit
    def rsum(x, i):
        if i == x.shape[0]:
            return 0.0
        x[i] = x[i] * x[i]
        return x[i] + rsum(x, i + 1)

    @njit
    def power(a, n):
        if n == 0:
            return 1.0
        return a * power(a, n - 1)

    with _raises("'.*rsum' is recursive"):
        zymase.grad(rsum)(X.copy(), 0)
    with _raises("'.*power' is recursive"):
        zymase.grad(power)(1.5, 4)


def test_engine_errors_name_the_users_function():
    # a pointer stored into memory the function cannot shadow: the engine's error is
    # about the generated kernel, and must be reported in terms of the user's function
    @njit
    def keep_pointer(x, out):
        out[0] = x[0] * x[0]
        return out[0]

    from zymase.frontends import numba as zn

    err = zn._in_user_terms(
        ZymaseError("active data is written through argument 9 of '__zymase_kernel_3_123_456.status', which has no shadow",
                    construct="llvm.store", function="__zymase_kernel_3_123_456.status.prepared", hint="mark it"),
        keep_pointer,
    )
    text = str(err)
    assert "__zymase_kernel" not in text
    assert "test_engine_errors_name_the_users_function.<locals>.keep_pointer" in text
    assert "llvm.store" in text and "@njit(debug=True)" in text


@njit
def _settle(x, tol, limit):
    """Iterates until the step is below tol (no trip count: the reverse sweep keeps
    each step on a stack) and raises when that takes more than limit steps."""
    s = 0.0
    steps = 0
    step = 1.0
    while step > tol:
        step *= 0.5
        s += step * np.sin(x[steps % x.shape[0]] * s)
        steps += 1
    if steps > limit:
        raise RuntimeError("did not settle")
    return s * x[0]


def test_exception_after_a_taped_loop_returns_at_once_and_frees_the_tape():
    # a raised exception abandons the derivative (autodiff.common.ABANDON): the gradient
    # function returns right there, and still frees the tape the loop filled
    import resource

    g = zymase.grad(_settle)
    x = X.copy()
    got = g(x, 1e-3, 100)
    h = 1e-6
    for i in range(x.size):
        up, dn = x.copy(), x.copy()
        up[i] += h
        dn[i] -= h
        assert got[i] == pytest.approx((_settle(up, 1e-3, 100) - _settle(dn, 1e-3, 100)) / (2 * h), rel=1e-6, abs=1e-9)
    with pytest.raises(RuntimeError, match="did not settle"):
        g(x, 1e-300, 10)  # ~1000 steps taped before the raise
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(20000):  # 20000 x ~1000 steps x 8+ bytes: gigabytes if the tape leaked
        with pytest.raises(RuntimeError):
            g(x, 1e-300, 10)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 200, f"the process grew by {grown_mb:.0f} MB on abandoned gradients"


def test_linear_algebra_without_rule_names_the_numpy_function():
    # '@', det, inv, eigh, svd, ... are differentiated now (tests/numba/test_linalg.py,
    # issue 26 item 3); np.linalg.eigvals calls Numba's numba_ez_rgeev, which has no rule:
    # the error names the NumPy function and says what to do in Python terms, not the C helper
    @njit
    def eigvals(a):
        return np.sum(np.linalg.eigvals(a))

    with _raises(r"np\.linalg\.eig / .* has no derivative in zymase: '[^']*eigvals' applies it to differentiated "
                 r"data.*apply np\.linalg\.eig only to values that are not differentiated"):
        zymase.grad(eigvals)(2.0 * np.eye(2))


def test_typed_dict_helpers_are_not_inlined_into_an_invalid_module():
    # Numba's dictionary helpers are noinline through an attribute group; marking them
    # alwaysinline too made LLVM reject the module (an internal error before)
    @njit
    def with_dict(x):
        d = {1: x}
        return d[1] * x

    line = with_dict.py_func.__code__.co_firstlineno + 2
    with _raises(rf"test_errors.py:{line}: '[^']*with_dict' keeps differentiated values in a typed Dict \(made on "
                 rf"line {line}\), whose items Numba keeps in its C runtime \('numba_dict_insert'\)"):
        zymase.grad(with_dict)(3.0)


def test_typed_list_and_dict_refusals_name_their_source_lines():
    # numba.typed.List/Dict keep their items in Numba's C runtime: refused in Python terms,
    # with the lines that make and fill the container (before: the C helper's name only,
    # and "compile with debug=True" for a line)
    from numba import types
    from numba.typed import Dict, List

    @njit
    def in_list(x):
        values = List()
        for i in range(x.shape[0]):
            values.append(2.0 * x[i])
        return values[0] * values[1]

    @njit
    def in_dict(x):
        d = Dict.empty(types.int64, types.float64)
        for i in range(x.shape[0]):
            d[i] = 2.0 * x[i]
        return d[0] * d[1]

    x = np.array([1.0, 2.0, 3.0])
    first = in_list.py_func.__code__.co_firstlineno
    with _raises(rf"test_errors.py:{first + 2}: '[^']*in_list' keeps differentiated values in a typed List \(made on "
                 rf"line {first + 2}, filled on line {first + 4}\).*hint: keep the values in a NumPy array"):
        zymase.grad(in_list)(x)
    first = in_dict.py_func.__code__.co_firstlineno
    with _raises(rf"test_errors.py:{first + 2}: '[^']*in_dict' keeps differentiated values in a typed Dict \(made on "
                 rf"line {first + 2}, filled on line {first + 4}\)"):
        zymase.grad(in_dict)(x)


def test_typed_dict_of_constants_differentiates():
    @njit
    def scaled(x):
        d = {1: 2.0, 2: 3.0}
        return d[1] * d[2] * x * x

    assert zymase.grad(scaled)(1.5) == pytest.approx(6.0 * 2 * 1.5, rel=1e-14)


def test_typed_list_of_indices_differentiates():
    # the list's length is read through an address Numba's runtime returns as an integer
    # (numba_list_size_address, inttoptr): an integer read, not active data, so the
    # refusal of integer addresses (analysis/untracked_pointers.py) must let it pass
    from numba.typed import List

    @njit
    def every_other(x):
        idx = List()
        for i in range(x.shape[0]):
            if i % 2 == 0:
                idx.append(i)
        s = 0.0
        for k in idx:
            s += x[k] * x[k]
        return s

    x = np.linspace(0.1, 1.0, 7)
    want = np.where(np.arange(7) % 2 == 0, 2.0 * x, 0.0)
    np.testing.assert_allclose(zymase.grad(every_other)(x), want, rtol=1e-14)


def test_exception_carrying_an_active_float_propagates():
    # the raised value is stored into Numba's exception record (NRT_Allocate'd): the
    # record gets a shadow like any malloc'd memory, and the exception reaches the caller
    from njit_corpus import raise_with_float

    x = np.linspace(1.0, 2.0, 5)
    with pytest.raises(ValueError, match="too large"):
        zymase.grad(raise_with_float)(x, 1.0)
    assert zymase.grad(raise_with_float, argnums=0)(x, 100.0)[0] == pytest.approx(
        np.sum(x * x) + 2 * x[0] * x[0], rel=1e-14)


def test_missing_rule_in_numbas_math_helpers_says_what_to_do():
    @njit
    def with_frexp(x):
        mantissa, _ = math.frexp(x)
        return mantissa * x

    with _raises("no derivative rule for external function 'numba_frexp'.*Numba's C helper"):
        zymase.grad(with_frexp)(2.5)


@njit(debug=True)
def _debug_array_expression(x):
    return np.sum(x * x) + x[0]


def test_debug_true_functions_are_differentiated():
    # the hint of every Numba-path error says to compile with @njit(debug=True); until
    # session 25 that broke functions with an array expression: its helpers' headers end
    # in "!dbg !N", and the "alwaysinline" zymase adds went after it (invalid LLVM IR)
    g = zymase.grad(_debug_array_expression)(X.copy())
    want = 2 * X
    want[0] += 1.0
    np.testing.assert_allclose(g, want, rtol=1e-12)


@njit
def _flattened(A):
    return np.sum(A.flatten() ** 2)


def test_preopt_false_refusals_name_the_numpy_call_and_its_line():
    # session 26: with preopt=False, A.flatten() was refused as "cannot deduce a single
    # floating-point type for the memory that the result of 'call @NRT_MemInfo_data_fast'
    # points to ... bytes [8, 16)", with a hint to copy C fields one by one; np.diff(x, 2),
    # y[1::2] = ... and np.linalg.lstsq named a mangled Numba function or gave a hint for
    # C programmers (those take 5-7 s of CPU to refuse: wild_campaign.py checks them, with
    # ZYMASE_WILD_NO_PREOPT=1). Each works with the default preopt=True
    with pytest.raises(ZymaseError) as info:
        zymase.grad(_flattened, preopt=False)(X[:4].reshape(2, 2).copy())
    msg = info.value.format()
    line = _flattened.py_func.__code__.co_firstlineno + 2
    assert msg.startswith(f"zymase: error: {__file__}:{line}: '_flattened' is compiled with preopt=False, and "
                          f"Numba's unoptimized code for .flatten() (line {line})"), msg
    assert "hint: use the default preopt=True" in msg and "\n" not in msg


@njit
def _squares_in_a_list(x):
    kept = []
    for i in range(x.shape[0]):
        if x[i] > 0.4:
            kept.append(x[i] * x[i])
    s = 0.0
    for v in kept:
        s += v
    return s


def test_list_of_differentiated_values_refused_in_python_terms():
    """A Python list grows in Numba's C runtime (NRT_MemInfo_varsize_realloc): refused
    naming the append and its line, with an array to use instead, not the C path's hint
    ("define the function in the same file")."""
    with pytest.raises(ZymaseError) as info:
        zymase.grad(_squares_in_a_list)(X.copy())
    text = info.value.format()
    line = _squares_in_a_list.py_func.__code__.co_firstlineno + 5  # the decorator's line + 5
    assert f"test_errors.py:{line}:" in text and ".append() on line" in text, text
    assert "np.empty(n)" in text and "same file" not in text and "\n" not in text, text


def test_list_refusal_of_jacfwd_names_the_users_line():
    # session 32: jacfwd (and jvp, jacrev) differentiate a generated output writer that
    # calls f; the refusal named the writer's source, "<zymase _squares_in_a_list>:1"
    with pytest.raises(ZymaseError) as info:
        zymase.jacfwd(_squares_in_a_list)(X.copy())
    text = info.value.format()
    line = _squares_in_a_list.py_func.__code__.co_firstlineno + 5
    assert f"test_errors.py:{line}:" in text and ".append() on line" in text and "<zymase" not in text, text


@njit
def _until_close(x):
    z = x.copy()
    for _ in range(50):
        zn = 0.5 * (z + 0.3 * np.cos(z))
        if np.allclose(zn, z):  # Numba's np.allclose broadcasts its operands into a list
            return np.sum(zn * x)
        z = zn
    return np.sum(z * x)


def test_list_made_by_a_numpy_function_is_named():
    # session 32: the refusal said "a list comprehension or a list grown by .append()" at
    # the function's first line, for a function without a list
    with pytest.raises(ZymaseError) as info:
        zymase.grad(_until_close)(X.copy())
    text = info.value.format()
    line = _until_close.py_func.__code__.co_firstlineno + 5
    assert f"test_errors.py:{line}:" in text and f"np.allclose(...) (line {line})" in text, text
    assert "comprehension" not in text and "np.all(np.abs(a - b)" in text and "\n" not in text, text


@njit
def _halving(x, k):
    if k <= 1:
        return x[k]
    return 0.5 * _halving(x, k - 1) + 0.25 * _halving(x, k - 2)


@njit
def _calls_recursive(x):
    return _halving(x, 4)


def test_call_of_recursive_function_refused_in_python_terms():
    """Numba calls a recursive njit function from another one through a function pointer:
    refused naming that, not the C path's "address taken in this file"."""
    with pytest.raises(ZymaseError) as info:
        zymase.grad(_calls_recursive)(X.copy())
    text = info.value.format()
    assert "recursive njit function" in text and "write the recursion as a loop" in text, text
    assert "this file" not in text and "llvm." not in text, text
