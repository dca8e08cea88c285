"""``@njit(parallel=True)`` functions with ``prange`` loops (issue 27 item 2): a map
loop, a reduction inside ``prange``, a loop whose adjoints scatter into neighbouring
elements and a 2-D loop (a prange over rows with an inner loop), differentiated in
reverse and forward mode against central finite differences of the user's own parallel
dispatcher run with Numba's threading layer at 1 and 2 threads.

The derivative is parallel: the parfor's gufunc is differentiated and its derivative is
forked through Numba's ``numba_parallel_for`` (transforms/numba_parfor.py); a reverse
sweep recomputes the loop on each thread (autodiff/numba_parfor.py). A prange loop whose
reverse sweep cannot recompute it falls back to the serial copy's derivative. The
tests check the compile record (the kernel forks a derivative through the threading
layer), the thread ids a forward derivative records, and that the user's dispatcher
keeps its parallel loops."""

import math

import numba
import numpy as np
import pytest
from numba import njit, prange

import zymase
from njit_fd import assert_close, fd_grad


@njit(parallel=True)
def prange_map(x, w):
    # map loop: every iteration writes its own element
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = math.sin(x[i]) * x[i] + math.exp(-0.5 * x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * out[i]
    return s


@njit(parallel=True)
def prange_reduction(x):
    # reduction inside prange: Numba combines per-thread partial sums
    s = 0.0
    for i in prange(x.shape[0]):
        s += math.tanh(x[i]) * x[i] + 0.5 * x[i] * x[i]
    return s


@njit(parallel=True)
def prange_neighbours(x, w):
    # stencil: iteration i reads x[i-1], x[i], x[i+1], so the adjoints of neighbouring
    # iterations meet in the same element of dx
    n = x.shape[0]
    out = np.zeros(n)
    for i in prange(1, n - 1):
        out[i] = x[i] + 0.2 * (x[i - 1] - 2.0 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i] * x[i + 1]
    s = 0.0
    for i in range(n):
        s += w[i] * out[i]
    return s


@njit(parallel=True)
def prange_rows(a, w):
    # 2-D: a prange over the rows of a matrix, an inner loop over its columns
    m, k = a.shape
    out = np.empty(m)
    for i in prange(m):
        acc = 0.0
        for j in range(k):
            acc += math.sin(a[i, j]) * w[j] + a[i, j] * a[i, j]
        out[i] = acc * acc
    s = 0.0
    for i in range(m):
        s += out[i]
    return s


@njit(parallel=True)
def prange_overwritten(x):
    # the array the loop reads is overwritten after it: its reverse sweep could not
    # recompute the loop, so the derivative is the serial copy's
    t = x.copy()
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = t[i] * t[i] * x[i]
    for i in range(x.shape[0]):
        t[i] = 0.0
    s = 0.0
    for i in range(x.shape[0]):
        s += out[i] + t[i]
    return s


@njit(parallel=True)
def prange_thread_ids(x, ids):
    # records which of Numba's threads ran each iteration
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        ids[i] = numba.get_thread_id()
        out[i] = x[i] * math.cos(x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += out[i]
    return s


@njit(parallel=True)
def prange_two_loops(x, w):
    # a serial loop, then two prange loops: a stencil, and a reduction of what it wrote
    n = x.shape[0]
    m = np.empty(n)
    for i in range(n):
        m[i] = 0.25 * x[i]
    a = np.zeros(n)
    for i in prange(1, n - 1):
        a[i] = math.cos(m[i - 1] + m[i + 1]) * x[i]
    s = 0.0
    for i in prange(n):
        s += a[i] * a[i] * w[i]
    for i in range(n):
        s += m[i]
    return s


def two_loops_gradient(x, w):
    m = 0.25 * x
    u = m[:-2] + m[2:]
    a = np.zeros_like(x)
    a[1:-1] = np.cos(u) * x[1:-1]
    abar = 2.0 * a * w
    g = np.zeros_like(x)
    g[1:-1] = abar[1:-1] * np.cos(u)
    ubar = -abar[1:-1] * x[1:-1] * np.sin(u)
    mbar = np.ones_like(x)
    mbar[:-2] += ubar
    mbar[2:] += ubar
    return g + 0.25 * mbar


@njit(parallel=True)
def prange_three_loops(x, w):
    # three prange loops: a map, a stencil reading it, and a reduction reading that
    n = x.shape[0]
    a = np.empty(n)
    for i in prange(n):
        a[i] = math.sin(x[i]) * x[i]
    b = np.empty(n)
    for i in prange(1, n - 1):
        b[i] = a[i - 1] * a[i + 1]
    s = 0.0
    for i in prange(1, n - 1):
        s += b[i] * w[i]
    for i in range(n):
        s += a[i]
    return s


def three_loops_gradient(x, w):
    a = np.sin(x) * x
    abar = np.ones_like(x)
    abar[:-2] += w[1:-1] * a[2:]
    abar[2:] += w[1:-1] * a[:-2]
    return abar * (np.cos(x) * x + np.sin(x))


def _record(f, mode):
    (rec,) = [r for r in zymase.stats() if r.function == f.__name__ and r.mode == mode][-1:]
    return rec


def _inputs(n=257):
    x = 0.3 + 0.5 * np.sin(0.37 * np.arange(n))
    w = np.cos(0.11 * np.arange(n))
    return x, w


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    # the tests need a threading layer with 2 threads (NUMBA_NUM_THREADS >= 2): set_num_threads raises otherwise
    before = numba.get_num_threads()
    numba.set_num_threads(request.param)
    yield request.param
    numba.set_num_threads(before)


def _arguments(f):
    x, w = _inputs()
    if f is prange_reduction or f is prange_overwritten:
        return (x,)
    if f is prange_rows:
        return (np.cos(0.3 * np.arange(6 * 40)).reshape(40, 6), w[:6].copy())
    return (x, w)


@pytest.mark.parametrize("f", [prange_map, prange_reduction, prange_neighbours, prange_rows],
                         ids=["map", "reduction", "neighbours", "rows_2d"])
def test_prange_gradient_matches_parallel_fd(f, threads):
    # issue 27 item 2: the reverse sweep of each loop kind, forked on the user's team
    args = _arguments(f)
    value, g = zymase.value_and_grad(f)(*(a.copy() for a in args))
    assert numba.get_num_threads() == threads
    # the finite differences run the user's parallel dispatcher on the current team
    assert_close(g, fd_grad(f, args, 0), 1e-6, what=f"{f.__name__} at {threads} threads")
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert value == pytest.approx(f.py_func(*args), rel=1e-12)
    # the derivative kernel forks a derivative of the loop through Numba's threading layer
    assert _record(f, "rev").parfors == "parallel"


@pytest.mark.parametrize("f", [prange_map, prange_reduction, prange_rows], ids=["map", "reduction", "rows_2d"])
def test_prange_tangent_matches_parallel_fd(f, threads):
    # issue 27 item 2, forward mode: the tangent loop runs in the forked derivative
    args = _arguments(f)
    direction = np.sin(1.7 * np.arange(args[0].size)).reshape(args[0].shape)
    tangents = (direction,) + tuple(np.zeros_like(a) for a in args[1:])
    value, tangent = zymase.jvp(f, args, tangents)
    expected = float(np.dot(fd_grad(f, args, 0).ravel(), direction.ravel()))
    assert tangent == pytest.approx(expected, rel=1e-6, abs=1e-8)
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert _record(f, "fwd").parfors == "parallel"


def test_forward_derivative_runs_on_numba_threads(threads):
    # issue 27 item 2: the thread ids the derivative's own loop records (forward mode has
    # no separate primal run) are those of the team numba.set_num_threads chose
    x = np.linspace(0.1, 2.0, 4096)
    ids = np.full(x.size, -1, dtype=np.int64)
    tangent = zymase.fwddiff(prange_thread_ids, zymase.Duplicated(x, np.ones_like(x)), zymase.Const(ids))
    assert tangent == pytest.approx(float(np.sum(np.cos(x) - x * np.sin(x))), rel=1e-10)
    assert set(ids.tolist()) == set(range(threads))
    assert _record(prange_thread_ids, "fwd").parfors == "parallel"


def test_unrecomputable_prange_uses_the_serial_derivative(threads):
    # issue 27 item 2: a loop whose input is overwritten after it cannot be recomputed by
    # the reverse sweep; the derivative is the serial copy's, never a wrong answer
    (x,) = _arguments(prange_overwritten)
    g = zymase.grad(prange_overwritten)(x.copy())
    assert_close(g, 3.0 * x * x, 1e-12, what="prange_overwritten")
    assert _record(prange_overwritten, "rev").parfors == "serial"


def test_user_dispatcher_stays_parallel():
    # differentiating builds a private serial copy; the user's dispatcher still has its parfor
    x, _ = _inputs()
    zymase.grad(prange_reduction)(x.copy())
    prange_reduction(x)
    (sig,) = prange_reduction.signatures
    assert "numba_parallel_for" in prange_reduction.inspect_llvm(sig)


@njit(parallel=True)
def prange_sines(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = math.sin(x[i]) * x[i]
    return out


def test_nested_and_vector_derivatives_of_prange_use_the_serial_copy():
    # issue 27 item 2: a Hessian (forward over the forked reverse) and a width-8 Jacobian
    # are not forked; they take the serial copy's derivative rather than refusing
    x = np.linspace(0.1, 1.0, 9)
    hess = zymase.hessian(prange_reduction)(x)
    assert_close(np.diag(hess), 1.0 - 2.0 * np.tanh(x) * (1.0 - np.tanh(x) ** 2) * x
                 + 2.0 * (1.0 - np.tanh(x) ** 2), 1e-10, what="hessian of prange_reduction")
    assert np.abs(hess - np.diag(np.diag(hess))).max() == 0.0
    jac = zymase.jacfwd(prange_sines)(x)
    assert_close(jac, np.diag(np.sin(x) + x * np.cos(x)), 1e-12, what="jacfwd of prange_sines")
    assert _record(prange_sines, "fwd").parfors == "serial"


@pytest.mark.parametrize("f, gradient", [(prange_two_loops, two_loops_gradient),
                                         (prange_three_loops, three_loops_gradient)], ids=["two", "three"])
def test_several_prange_loops_get_the_parallel_reverse(f, gradient):
    # issue 27 item 2 (performance): a function with several prange loops gets the
    # parallel reverse (each loop recomputed on the user's team), not the serial copy's
    # derivative. (Each launch's arguments are read from the stores that reach it, past
    # Numba's zero-filling of its stack arrays; the arrays the loops read are released
    # once, after the reverse sweep, where LLVM had released them on two paths.) Checked
    # at 1, 2 and, when NUMBA_NUM_THREADS allows, 4 threads against the closed form.
    x, w = _inputs()
    expected = gradient(x, w)
    before = numba.get_num_threads()
    try:
        for t in [t for t in (1, 2, 4) if t <= numba.config.NUMBA_NUM_THREADS]:
            numba.set_num_threads(t)
            value, g = zymase.value_and_grad(f)(x.copy(), w.copy())
            assert_close(g, expected, 1e-12, what=f"{f.__name__} at {t} threads")
            assert value == pytest.approx(f.py_func(x, w), rel=1e-12)
    finally:
        numba.set_num_threads(before)
    assert _record(f, "rev").parfors == "parallel"


@njit(parallel=True)
def prange_array_reduction(x, w):
    # an array reduction variable: Numba gives each thread its own acc and adds them up;
    # the gufunc's shape check of `acc += ...` formats its error from a global
    a = x.reshape(-1, 3)
    acc = np.zeros(3)
    for i in prange(a.shape[0]):
        acc += a[i] * a[i]
    return np.sum(acc * w)


def test_prange_array_reduction_uses_the_serial_derivative():
    # session 32: the gufunc, kept outlined, reads a global the activity analysis marks
    # active, which was refused naming the gufunc's mangled name; such a loop now takes
    # the serial copy's derivative
    x = np.cos(0.3 * np.arange(12.0))
    w = np.array([1.0, -2.0, 0.5])
    g = zymase.grad(prange_array_reduction)(x.copy(), w)
    assert_close(g, (2.0 * x.reshape(-1, 3) * w).ravel(), 1e-12, what="prange_array_reduction")
    assert _record(prange_array_reduction, "rev").parfors == "serial"
