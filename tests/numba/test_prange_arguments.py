"""``prange`` loops that write into array arguments (issue 27 item 2, session 26).

``out[i] = f(x[i])`` with ``out`` an argument is the most common prange pattern. Its
reverse sweep recomputes the loop (autodiff/numba_parfor.py) only if ``x`` and ``out``
are distinct memory; Numba passes no ``noalias``, so before, such a function got the
serial copy's derivative. Every entry point refuses a call where two array arguments
overlap and the function may write into one (api_aliasing.py), so a kernel of a
function with prange loops takes its array arguments' data pointers as ``noalias``
(frontends/numba_kernel.py) and the derivative is forked. What is still unsafe (an
argument updated in place in the loop, an input overwritten after it) keeps the serial
copy's derivative; arguments that do overlap are still refused, from Python and from
njit code. Gradients against central differences of the user's parallel dispatcher.
"""

import math

import numba
import numpy as np
import pytest
from numba import njit, prange

import zymase
from zymase.errors import ZymaseError
from njit_fd import assert_close, fd_grad


@njit(parallel=True)
def into_out(x, out):
    for i in prange(x.shape[0]):
        out[i] = np.sin(x[i]) * x[i]
    return out.sum()


@njit(parallel=True)
def into_two(x, w, out1, out2, ids):
    # two inputs and two outputs, and the Numba thread that ran each iteration
    for i in prange(x.shape[0]):
        out1[i] = math.sin(x[i]) * w[i]
        out2[i] = x[i] * x[i] + math.exp(0.3 * w[i] * x[i])
        ids[i] = numba.get_thread_id()
    s = 0.0
    for i in range(x.shape[0]):
        s += out1[i] * out2[i]
    return s


@njit(parallel=True)
def stencil_out(x, out):
    n = x.shape[0]
    for i in prange(1, n - 1):
        out[i] = x[i - 1] - 2.0 * x[i] + x[i + 1]
    s = 0.0
    for i in range(1, n - 1):
        s += out[i] * out[i] * math.cos(0.1 * i)
    return s


@njit(parallel=True)
def fused_into(x, w, a, b):
    # two maps Numba fuses into one parfor, which reads a[i] after writing it
    n = x.shape[0]
    for i in prange(n):
        a[i] = math.sin(x[i])
    for i in prange(n):
        b[i] = a[i] * a[i] + x[i]
    s = 0.0
    for i in range(n):
        s += w[i] * b[i]
    return s


@njit(parallel=True)
def in_place(x):
    # an argument updated in place: the recomputation would read what it wrote
    for i in prange(x.shape[0]):
        x[i] = math.sin(x[i]) * x[i]
    return x.sum()


@njit(parallel=True)
def overwritten_after(x, out):
    # the loop's input is overwritten after it: the reverse sweep cannot recompute it
    for i in prange(x.shape[0]):
        out[i] = x[i] * x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += out[i] * x[i]
        x[i] = 0.0
    return s


_grad_into_out = zymase.grad(into_out)


@njit
def _njit_grad(x, out):
    return _grad_into_out(x, out)


def _record(f, mode="rev"):
    return [r for r in zymase.stats() if r.function == f.__name__ and r.mode == mode][-1]


N = 257
X = 0.3 + 0.5 * np.sin(0.37 * np.arange(N))
W = np.cos(0.11 * np.arange(N))


@pytest.fixture
def two_threads():
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    yield
    numba.set_num_threads(before)


def test_writing_into_an_argument_gets_the_parallel_reverse(two_threads):
    # failed on main: parfors == "serial" (x read and out written may alias)
    g = zymase.grad(into_out)(X.copy(), np.zeros(N))
    assert_close(g, np.cos(X) * X + np.sin(X), 1e-12, what="into_out")
    assert _record(into_out).parfors == "parallel"
    # from njit code, the same kernel
    assert_close(_njit_grad(X.copy(), np.zeros(N)), np.cos(X) * X + np.sin(X), 1e-12, what="into_out from njit")


def test_two_inputs_and_two_outputs_run_on_the_team(two_threads):
    args = (X.copy(), W.copy(), np.zeros(N), np.zeros(N), np.full(N, -1, dtype=np.int64))
    gx, gw = zymase.grad(into_two, argnums=(0, 1))(*args)
    assert_close(gx, fd_grad(into_two, args, 0), 1e-6, what="into_two d/dx")
    assert_close(gw, fd_grad(into_two, args, 1), 1e-6, what="into_two d/dw")
    assert _record(into_two).parfors == "parallel"
    # the forked loops ran on both threads (the serial copy's thread id is 0 throughout)
    ids = np.full(N, -1, dtype=np.int64)
    zymase.grad(into_two)(X.copy(), W.copy(), np.zeros(N), np.zeros(N), ids)
    assert set(ids.tolist()) == {0, 1}


def test_stencil_into_an_argument(two_threads):
    args = (X.copy(), np.zeros(N))
    value, g = zymase.value_and_grad(stencil_out)(*args)
    assert_close(g, fd_grad(stencil_out, args, 0), 1e-6, what="stencil_out")
    assert value == pytest.approx(stencil_out.py_func(X.copy(), np.zeros(N)), rel=1e-12)
    assert _record(stencil_out).parfors == "parallel"


def test_fused_loops_into_arguments(two_threads):
    # a and b outside argnums: each gets a shadow (the serial copy names it) in turn
    g = zymase.grad(fused_into)(X.copy(), W.copy(), np.zeros(N), np.zeros(N))
    assert_close(g, W * (2.0 * np.sin(X) * np.cos(X) + 1.0), 1e-12, what="fused_into")
    assert _record(fused_into).parfors == "parallel"


def test_what_is_still_unsafe_stays_serial(two_threads):
    assert_close(zymase.grad(in_place)(X.copy()), np.cos(X) * X + np.sin(X), 1e-12, what="in_place")
    assert _record(in_place).parfors == "serial"
    assert_close(zymase.grad(overwritten_after)(X.copy(), np.zeros(N)), 3.0 * X * X, 1e-12, what="overwritten")
    assert _record(overwritten_after).parfors == "serial"


def test_overlapping_arguments_are_still_refused():
    x = X.copy()
    # the line of the write, out[i] = ... (co_firstlineno is the decorator's)
    line = into_out.py_func.__code__.co_firstlineno + 3
    with pytest.raises(ZymaseError, match=rf"^zymase: error: .*:{line}: grad of 'into_out': argument 0 \('x'\) "
                                          r"and argument 1 \('out'\) share memory"):
        zymase.grad(into_out)(x, x)
    with pytest.raises(ZymaseError, match=r"^zymase: error: .*argument 0 \('x'\) and argument 1 \('out'\) share"):
        _njit_grad(x, x)
    # a view overlapping the input, from Python and from njit code
    buf = np.concatenate([X, X])
    with pytest.raises(ZymaseError, match="share memory"):
        zymase.grad(into_out)(buf[:N], buf[1:N + 1])
    with pytest.raises(ZymaseError, match="share memory"):
        _njit_grad(buf[:N], buf[1:N + 1])
    with pytest.raises(ZymaseError, match="share memory"):
        zymase.autodiff(into_out, zymase.Duplicated(x, np.zeros(N)), zymase.Duplicated(x, np.zeros(N)))


def test_constant_output_argument_is_named():
    # active data written into a Const argument by a forked loop: the error names the
    # argument (the serial copy's), not the loop's gufunc
    with pytest.raises(ZymaseError, match=r"^zymase: error: .*writes differentiated values into argument 1 \('out'\)"):
        zymase.autodiff(into_out, zymase.Duplicated(X.copy(), np.zeros(N)), zymase.Const(np.zeros(N)))
