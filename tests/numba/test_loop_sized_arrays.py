"""Arrays sized by the counter of the loop that allocates them (``np.empty(m)`` for
``m`` in ``range(1, n + 1)``). Numba's size check leaves that loop when ``m == 2**60``
(the first size too large), a test LLVM places before the loop's own ``m == n``; the
tape of the loop was sized by that first test alone, 2**60 slots of 8 bytes, whose
allocation failed and the gradient crashed (a segmentation fault). Each exit test
bounds the loop's count; the least is taken (analysis/trip_count.TripCount.others).
The loop's own test may also be one the count cannot take as a bound (a counter
counting down by an add without the unsigned no-wrap flag, compared unsigned): then it
is the count, not the size limit's (fuzz seeds 968017 and 968037). Checked against
central differences."""

import numpy as np
from numba import njit

import zymase
from njit_fd import assert_close, fd_grad


@njit
def growing_squares(x):
    n = x.shape[0]
    s = 0.0
    for m in range(1, n + 1):
        v = np.empty(m)
        for i in range(m):
            v[i] = x[i] * x[i]
        s += np.sum(v * v)
    return s


@njit
def growing_heat(x, a):
    # a short explicit heat equation on each prefix of x (1 to n cells, boundary
    # cells reflected), its buffers swapped every step
    n = x.shape[0]
    s = 0.0
    for m in range(1, n + 1):
        u = x[:m].copy()
        v = np.empty(m)
        for _ in range(3):
            for i in range(m):
                left = u[i - 1] if i > 0 else u[0]
                right = u[i + 1] if i < m - 1 else u[m - 1]
                v[i] = u[i] + a * (left - 2.0 * u[i] + right) + 0.05 * np.sin(u[i])
            u, v = v, u
        s += np.sum(u * u)
    return s


@njit
def shifted_then_growing(x):
    # (after the slice assignment, LLVM counts the m loop down from n too, and leaves
    # it when that counter, unsigned, is no longer above 1)
    n = x.shape[0]
    y = np.zeros(n)
    y[1:] = 0.3 * x[:-1]
    s = 0.0
    for m in range(1, n + 1):
        v = np.zeros(m + 1)
        for i in range(m):
            v[i + 1] = 0.5 * np.cos(x[i])
        s += 0.3 * np.sum(v * v)
    return s + y[1]


def test_arrays_sized_by_the_loop_counter():
    x = np.linspace(-1.1, 1.2, 5)
    assert_close(zymase.grad(growing_squares)(x.copy()), fd_grad(growing_squares.py_func, (x,), 0), 1e-6)


def test_time_loop_on_each_prefix():
    x, a = np.linspace(-1.1, 1.2, 5), 0.2
    gx, ga = zymase.grad(growing_heat, argnums=(0, 1))(x.copy(), a)
    assert_close(gx, fd_grad(growing_heat.py_func, (x, a), 0), 1e-6)
    assert_close(ga, fd_grad(growing_heat.py_func, (x, a), 1), 1e-6)


def test_loop_counted_down_too():
    x = np.linspace(-1.1, 1.2, 7)
    assert_close(zymase.grad(shifted_then_growing)(x.copy()), fd_grad(shifted_then_growing.py_func, (x,), 0), 1e-6)
