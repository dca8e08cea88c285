"""njit functions of varied shapes, with inputs, for the Numba front-end tests.

Each entry: (function, make_args) where make_args() returns fresh arguments (arrays
are mutated by some functions, so every call gets new ones). Every function returns a
float; the tests differentiate with respect to every float and float-array argument.
"""

import math

import numpy as np
from numba import njit, prange


def _x(n=7, lo=0.3, hi=1.4, dtype=np.float64):
    return np.linspace(lo, hi, n).astype(dtype)


@njit
def scalar_poly(a, b):
    return a * a * b + 3.0 * a - b / (1.0 + a * a)


@njit
def scalar_math(a, b):
    return math.exp(a) * math.sin(b) + math.log(a + 2.0) - math.sqrt(b) + math.tanh(a * b) + math.atan2(a, b)


@njit
def scalar_branch(a, b):
    if a > b:
        return a * b
    return math.cos(a) + b ** 3


@njit
def loop_sum_sin(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * x[i]
    return s


@njit
def inplace_scale(x, a):
    for i in range(x.shape[0]):
        x[i] = x[i] * a + math.exp(-x[i])
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s


@njit
def overwrite_steps(x, dt):
    # explicit time stepping in place: every step overwrites the state
    for _ in range(5):
        for i in range(x.shape[0]):
            x[i] = x[i] - dt * x[i] * x[i]
    return np.sum(x)


@njit
def matrix_2d(A, v):
    s = 0.0
    for i in range(A.shape[0]):
        r = 0.0
        for j in range(A.shape[1]):
            r += A[i, j] * v[j]
        s += r * r
    return s


@njit
def tensor_3d(T):
    s = 0.0
    for i in range(T.shape[0]):
        for j in range(T.shape[1]):
            for k in range(T.shape[2]):
                s += T[i, j, k] ** 2 * (i + 2 * j + 3 * k + 1)
    return math.sqrt(s)


@njit
def alloc_empty(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = x[i] * x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += y[i] * math.cos(y[i])
    return s


@njit
def alloc_zeros_ones(x):
    z = np.zeros(x.shape[0])
    o = np.ones(x.shape[0])
    for i in range(x.shape[0]):
        z[i] += math.exp(x[i])
        o[i] *= x[i]
    return np.sum(z * o)


@njit
def alloc_2d(x):
    n = x.shape[0]
    M = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            M[i, j] = x[i] * x[j] + (i == j)
    return np.sum(M * M)


@njit
def ufunc_mix(x):
    return np.sum(np.exp(x) + np.sin(x) * np.sqrt(x) + np.power(x, 3) + np.abs(x - 0.8) + np.tanh(x) + np.log(x))


@njit
def dot_1d(x, y):
    return np.dot(x, y) * np.sum(x)


@njit
def helper_square(v):
    return v * v


@njit
def helper_norm(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += helper_square(x[i])
    return math.sqrt(s)


@njit
def calls_between(x, a):
    return helper_norm(x) * a + helper_square(a)


@njit
def helper_fill(out, x, a):
    for i in range(x.shape[0]):
        out[i] = a * x[i] * x[i]


@njit
def calls_with_arrays(x, a):
    y = np.zeros_like(x)
    helper_fill(y, x, a)
    return np.sum(y) + y[0] * y[-1]


@njit
def float32_loop(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += x[i] * x[i] + np.float32(0.5) * x[i]
    return s


@njit
def float32_scalar(a):
    return np.float32(math.sin(a)) * a


@njit
def tuple_arg(t, x):
    a, b = t
    s = 0.0
    for i in range(x.shape[0]):
        s += a * x[i] + b * x[i] * x[i]
    return s


@njit(error_model="python")
def python_errors(x, a):
    return np.sum(x) / a + x[0] % 3.0


@njit(boundscheck=True)
def bounds_checked(x):
    s = 0.0
    for i in range(1, x.shape[0]):
        s += (x[i] - x[i - 1]) ** 2
    return s


@njit(parallel=True)
def prange_serial(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += math.tanh(x[i]) * x[i]
    return s


@njit
def while_loop(a):
    x = a
    n = 0
    while x < 10.0 and n < 100:
        x = x * 1.5 + 0.1
        n += 1
    return x * n


@njit
def early_exit(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 1.2:
            break
        s += x[i] ** 3
    return s


@njit
def integer_arg(x, n):
    s = 0.0
    for i in range(n):
        s += x[i % x.shape[0]] * (i + 1)
    return s * s


@njit
def euler_ode(u0, k, dt):
    u = u0.copy()
    for _ in range(20):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + dt * (k * (u[i - 1] - 2 * u[i] + u[i + 1]) + u[i] * (1 - u[i]))
        u = un
    return np.sum(u * u)


@njit
def slice_assign_rows(x):
    # m[i, :] = expr copies the right-hand side through a scratch buffer from NRT_Allocate
    m = np.zeros((x.shape[0], x.shape[0]))
    for i in range(x.shape[0]):
        m[i, :] = x * x[i] + math.sin(x[i])
    return np.sum(m * m)


@njit
def reshape_views(x):
    # reshape and .T are views; Numba's reshape helper computes their strides in C
    m = x[:6].reshape((2, 3))
    t = m.T
    s = 0.0
    for i in range(3):
        s += t[i, 0] * t[i, 1] * (i + 1)
    return s + np.max(x) * np.min(x) + np.mean(x)


@njit
def outer_product(x):
    # ravel() returns its argument or a copy: their MemInfos meet in a phi
    m = np.outer(x, x[::-1])
    return np.sum(np.sin(m))


@njit
def raise_with_float(x, limit):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    if s > limit:
        raise ValueError("too large", s)  # a float stored in Numba's exception record
    return s * x[0]


@njit
def cumsum_mask(x):
    # np.cumsum goes through Numba's reshape helper; a boolean mask copies the selection
    c = np.cumsum(x)
    return np.sum(c * c) + np.sum(x[x > 0.8] ** 3)


@njit
def gamma_cbrt(x):
    # math.gamma and math.ldexp are Numba's numba_gamma and numba_ldexp, math.lgamma libm's
    # lgamma (gamma and lgamma need digamma);
    # np.cbrt computes -pow(-x, 1/3) and pow(x, 1/3) and selects: the side not taken is NaN
    s = 0.0
    for i in range(x.shape[0]):
        s += math.lgamma(x[i] + 0.5) * math.gamma(x[i]) + np.cbrt(x[i] - 0.9) + math.ldexp(x[i] * x[i], 3)
    return s


CORPUS = {
    "scalar_poly": (scalar_poly, lambda: (0.7, 1.3)),
    "scalar_math": (scalar_math, lambda: (0.7, 1.3)),
    "scalar_branch_true": (scalar_branch, lambda: (1.5, 0.4)),
    "scalar_branch_false": (scalar_branch, lambda: (0.4, 1.5)),
    "loop_sum_sin": (loop_sum_sin, lambda: (_x(),)),
    "inplace_scale": (inplace_scale, lambda: (_x(), 1.7)),
    "overwrite_steps": (overwrite_steps, lambda: (_x(), 0.1)),
    "matrix_2d": (matrix_2d, lambda: (np.outer(_x(4), _x(5)) + 0.1, _x(5))),
    "tensor_3d": (tensor_3d, lambda: (_x(24).reshape(2, 3, 4),)),
    "alloc_empty": (alloc_empty, lambda: (_x(),)),
    "alloc_zeros_ones": (alloc_zeros_ones, lambda: (_x(),)),
    "alloc_2d": (alloc_2d, lambda: (_x(5),)),
    "ufunc_mix": (ufunc_mix, lambda: (_x(),)),
    "dot_1d": (dot_1d, lambda: (_x(), _x()[::-1].copy())),
    "calls_between": (calls_between, lambda: (_x(), 0.9)),
    "calls_with_arrays": (calls_with_arrays, lambda: (_x(), 0.9)),
    "float32_loop": (float32_loop, lambda: (_x(dtype=np.float32),)),
    "float32_scalar": (float32_scalar, lambda: (np.float32(0.8),)),
    "tuple_arg": (tuple_arg, lambda: ((0.6, 1.1), _x())),
    "python_errors": (python_errors, lambda: (_x(), 1.9)),
    "bounds_checked": (bounds_checked, lambda: (_x() ** 2,)),
    "prange_serial": (prange_serial, lambda: (_x(),)),
    "while_loop": (while_loop, lambda: (0.8,)),
    "early_exit": (early_exit, lambda: (_x(),)),
    "integer_arg": (integer_arg, lambda: (_x(), 11)),
    "euler_ode": (euler_ode, lambda: (_x(8), 0.3, 0.05)),
    "slice_assign_rows": (slice_assign_rows, lambda: (_x(5),)),
    "reshape_views": (reshape_views, lambda: (_x(),)),
    "outer_product": (outer_product, lambda: (_x(4),)),
    "raise_with_float": (raise_with_float, lambda: (_x(), 100.0)),
    "cumsum_mask": (cumsum_mask, lambda: (_x(),)),
    "gamma_cbrt": (gamma_cbrt, lambda: (_x(),)),
}
