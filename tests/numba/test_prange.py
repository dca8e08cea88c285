"""``@njit(parallel=True)`` functions with ``prange`` loops (issue 27 item 2): a map
loop, a reduction inside ``prange`` and a loop whose adjoints scatter into neighbouring
elements, differentiated against central finite differences of the user's own parallel
dispatcher run with Numba's threading layer at 1 and 2 threads.

The derivative is built from a private serial copy of the function
(``frontends/numba_copy._private_copy`` drops ``parallel``), so what these tests pin down is
that the gradient of the parallel program is right whatever team the primal ran on, and
that the user's dispatcher keeps its parallel loops."""

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


@pytest.mark.parametrize("f", [prange_map, prange_reduction, prange_neighbours],
                         ids=["map", "reduction", "neighbours"])
def test_prange_gradient_matches_parallel_fd(f, threads):
    x, w = _inputs()
    args = (x,) if f is prange_reduction else (x, w)
    value, g = zymase.value_and_grad(f)(*(a.copy() for a in args))
    assert numba.get_num_threads() == threads
    # the finite differences run the user's parallel dispatcher on the current team
    assert_close(g, fd_grad(f, args, 0), 1e-6, what=f"{f.__name__} at {threads} threads")
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert value == pytest.approx(f.py_func(*args), rel=1e-12)


def test_user_dispatcher_stays_parallel():
    # differentiating builds a private serial copy; the user's dispatcher still has its parfor
    x, _ = _inputs()
    zymase.grad(prange_reduction)(x.copy())
    prange_reduction(x)
    (sig,) = prange_reduction.signatures
    assert "numba_parallel_for" in prange_reduction.inspect_llvm(sig)
