"""njit functions that Numba's optimizer vectorizes, compiled by the user before zymase
sees them (imported as a module by test_vectorized_callees)."""

from numba import njit


@njit
def scale(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] * a


@njit(fastmath=True)
def sumsq(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s
