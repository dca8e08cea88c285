"""njit functions in the styles of public njit code (physics, finance, signal processing,
statistics kernels), written for session 25's hunt for silent wrong derivatives: views and
slices with steps, negative strides, boolean masks, np.where, fancy indexing, cumsum/
cumprod/diff, sort/argsort/argmax-driven control, clip/maximum/minimum, fmod and %,
floor, integer-float mixing, float32, tuples of arrays, structured dtypes, 2-D arrays,
np.dot/@, np.linalg, recursion, closures, globals, early returns, while loops with data-
dependent exits, raise paths, output buffers passed in, one array passed twice.

WILD maps a name to (function, make_args(rng), result kind "float" | "tuple" | "array");
wild_campaign.py checks them against central differences (run by name: not in the
default suite).
"""

import math

import numpy as np
from numba import njit

G_COEF = np.array([0.5, -1.25, 2.0, 0.75])
G_SCALE = 1.7


def _u(rng, n, lo=0.3, hi=1.5, dtype=np.float64):
    return rng.uniform(lo, hi, n).astype(dtype)


@njit
def inplace_axpy(x, y, a):
    for i in range(x.shape[0]):
        y[i] += a * x[i]
    return np.sum(y * y)


@njit
def step_slice(x):
    v = x[1::2]
    w = x[::3]
    return np.sum(v * v) + np.sum(w * w * w)


@njit
def negative_stride(x):
    r = x[::-1]
    s = 0.0
    for i in range(r.shape[0]):
        s += r[i] * (i + 1) * x[i]
    return s


@njit
def reversed_copy_write(x):
    y = x[::-1].copy()
    for i in range(1, y.shape[0]):
        y[i] = y[i] * y[i - 1]
    return np.sum(y)


@njit
def neg_stride_write(x):
    y = np.zeros(x.shape[0])
    r = y[::-1]
    for i in range(x.shape[0]):
        r[i] = x[i] * x[i] * (i + 1)
    return np.sum(y * np.arange(x.shape[0]))


@njit
def bool_mask_assign(x):
    y = x.copy()
    y[y > 0.9] = 0.9
    return np.sum(y * y * x)


@njit
def bool_mask_sum(x):
    m = x > 0.8
    return np.sum(x[m] ** 2) + np.sum(np.sin(x[~m]))


@njit
def where_clip(x):
    y = np.where(x > 0.9, x * x, 2.0 * x)
    z = np.clip(x, 0.5, 1.2)
    return np.sum(y * z)


@njit
def fancy_index(x, idx):
    y = x[idx]
    return np.sum(y * y * np.arange(1, y.shape[0] + 1))


@njit
def fancy_scatter(x, idx):
    y = np.zeros(x.shape[0])
    y[idx] = x[idx] ** 2
    return np.sum(y * x)


@njit
def cumsum_cumprod(x):
    c = np.cumsum(x)
    p = np.cumprod(x)
    return np.sum(c * p)


@njit
def diff_diff(x):
    d = np.diff(x)
    d2 = np.diff(x, 2)
    return np.sum(d * d) + np.sum(d2 ** 3)


@njit
def sort_weights(x):
    s = np.sort(x)
    w = np.arange(1.0, x.shape[0] + 1.0)
    return np.sum(s * w)


@njit
def argsort_driven(x):
    o = np.argsort(x)
    s = 0.0
    for k in range(o.shape[0]):
        s += x[o[k]] * (k + 1) ** 2
    return s


@njit
def argmax_driven(x):
    k = np.argmax(x)
    j = np.argmin(x)
    return x[k] * x[j] + np.sum(x) * x[k]


@njit
def maximum_minimum(x, y):
    return np.sum(np.maximum(x, y) * np.minimum(x, 1.1))


@njit
def fmod_mod(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.fmod(3.0 * x[i], 0.7) + (5.0 * x[i]) % 0.9
    return s


@njit
def floor_frac(x):
    s = 0.0
    for i in range(x.shape[0]):
        t = 4.0 * x[i]
        s += (t - np.floor(t)) ** 2 + math.floor(t) * x[i] + np.ceil(t) * t
    return s


@njit
def int_float_mix(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        k = int(x[i] * 10.0)
        s += x[i] * k + x[i] * (i // 2) + n * x[i] / (i + 1)
    return s


@njit
def float32_kernel(x):
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += np.float32(math.exp(x[i])) * x[i]
    return s


@njit
def float32_ufunc(x):
    return np.sum(np.sqrt(x) * x + np.tanh(x))


@njit
def tuple_of_arrays(t):
    a, b = t
    return np.sum(a * b) + np.sum(a) ** 2


@njit
def returns_tuple(x):
    return np.sum(x * x), np.sum(np.sin(x))


@njit
def returns_array(x):
    y = np.empty_like(x)
    for i in range(x.shape[0]):
        y[i] = x[i] * x[(i + 1) % x.shape[0]]
    return y


@njit
def two_d_c(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i, j] * A[i, j] * (i + 1) - A[i, j] * j
    return s


@njit
def two_d_f(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += math.sin(A[i, j]) * (i + 2 * j + 1)
    return s


@njit
def two_d_transpose_sum(A):
    return np.sum(A.T * A.T) + np.sum(A[:, 0] * A[0, :A.shape[0]])


@njit
def axis_sums(A):
    r = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        r[i] = np.sum(A[i, :])
    c = A.sum(axis=0)
    return np.sum(r * r) + np.sum(c ** 3)


@njit
def dot_matmul(A, x):
    y = A @ x
    z = np.dot(A.T, y)
    return np.dot(y, y) + np.sum(z)


@njit
def matmul_2d(A, B):
    C = A @ B
    return np.sum(C * C)


@njit
def linalg_solve(A, b):
    x = np.linalg.solve(A, b)
    return np.sum(x * x)


@njit
def linalg_inv_det(A):
    return np.sum(np.linalg.inv(A)) + np.linalg.det(A)


@njit
def linalg_norm(x, A):
    return np.linalg.norm(x) + np.linalg.norm(A)


@njit
def rec_poly(x, n):
    if n == 0:
        return 1.0
    return x * rec_poly(x, n - 1) + 0.5


@njit
def uses_globals(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += G_COEF[i % 4] * x[i] * G_SCALE
    return s * s


@njit
def early_return_loop(x, thr):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
        if s > thr:
            return s * x[i]
    return s


@njit
def while_newton(a):
    # sqrt(a) by Newton: data-dependent exit
    x = a
    it = 0
    while abs(x * x - a) > 1e-12 and it < 50:
        x = 0.5 * (x + a / x)
        it += 1
    return x


@njit
def try_raise(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            raise ValueError("negative")
        s += math.log(x[i])
    return s


@njit
def out_buffer(x, out):
    for i in range(x.shape[0]):
        out[i] = math.exp(x[i])
    return np.sum(out * x)


@njit
def alias_twice(x, y):
    for i in range(x.shape[0]):
        y[i] = y[i] * x[i]
    return np.sum(y)


@njit
def alias_driver(x):
    return alias_twice(x, x)


@njit
def record_particles(p):
    s = 0.0
    for i in range(p.shape[0]):
        s += p[i].m * (p[i].vx ** 2 + p[i].vy ** 2)
    return 0.5 * s


@njit
def nbody_energy(pos, m):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            e -= m[i] * m[j] / math.sqrt(dx * dx + dy * dy + dz * dz + 0.01)
    return e


@njit
def black_scholes(S, K, T, r, sigma):
    s = 0.0
    for i in range(S.shape[0]):
        d1 = (math.log(S[i] / K[i]) + (r + 0.5 * sigma * sigma) * T[i]) / (sigma * math.sqrt(T[i]))
        d2 = d1 - sigma * math.sqrt(T[i])
        c = S[i] * 0.5 * (1 + math.erf(d1 / math.sqrt(2.0))) - K[i] * math.exp(-r * T[i]) * 0.5 * (1 + math.erf(d2 / math.sqrt(2.0)))
        s += c
    return s


@njit
def fir_filter(x, h):
    n = x.shape[0]
    m = h.shape[0]
    y = np.zeros(n)
    for i in range(n):
        for k in range(m):
            if i - k >= 0:
                y[i] += h[k] * x[i - k]
    return np.sum(y * y)


@njit
def iir_filter(x, a):
    y = np.empty_like(x)
    y[0] = x[0]
    for i in range(1, x.shape[0]):
        y[i] = a * y[i - 1] + (1 - a) * x[i]
    return np.sum(y ** 2)


@njit
def ewma_var(x, lam):
    m = x[0]
    v = 0.0
    for i in range(1, x.shape[0]):
        d = x[i] - m
        m += (1 - lam) * d
        v = lam * (v + (1 - lam) * d * d)
    return m + math.sqrt(v + 1e-3)


@njit
def logsumexp_stable(x):
    m = np.max(x)
    return m + math.log(np.sum(np.exp(x - m)))


@njit
def softmax_ce(x, y):
    e = np.exp(x - x.max())
    p = e / e.sum()
    return -np.sum(y * np.log(p))


@njit
def mean_std(x):
    return np.mean(x) * np.std(x) + np.var(x)


@njit
def median_like(x):
    s = np.sort(x)
    return s[s.shape[0] // 2] * np.median(x)


@njit
def percentile_interp(x):
    return np.percentile(x, 30.0)


@njit
def interp_table(x, xp, fp):
    return np.sum(np.interp(x, xp, fp) ** 2)


@njit
def closure_inner(x, a):
    def g(v):
        return a * v * v
    s = 0.0
    for i in range(x.shape[0]):
        s += g(x[i])
    return s


@njit
def concat_stack(x, y):
    z = np.concatenate((x, y * y))
    return np.sum(z * np.arange(z.shape[0]))


@njit
def reshape_ravel(x):
    m = x.reshape((2, x.shape[0] // 2))
    r = m.T.ravel()
    return np.sum(r * np.arange(r.shape[0]))


@njit
def flatten_f(A):
    r = A.flatten()
    return np.sum(r * np.arange(r.shape[0]) * r)


@njit
def abs_sign(x):
    return np.sum(np.abs(x - 0.9) * np.sign(x - 0.7))


@njit
def hypot_atan2(x, y):
    return np.sum(np.hypot(x, y) + np.arctan2(x, y))


@njit
def power_frac(x, p):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** p + x[i] ** 2.5 + x[i] ** -1
    return s


@njit
def int_pow_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** (i % 4)
    return s


@njit
def copyto_slice(x):
    y = np.zeros(2 * x.shape[0])
    y[::2] = x
    y[1::2] = x * x
    return np.sum(y * np.arange(y.shape[0]))


@njit
def fill_then_add(x):
    y = np.empty(x.shape[0])
    y.fill(2.0)
    y += x
    y *= x
    return np.sum(y)


@njit
def inplace_ops_array(x):
    y = x.copy()
    y **= 2
    y -= x
    y /= (1 + x)
    return np.sum(y)


@njit
def min_max_builtin(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += max(x[i], x[i + 1]) * min(x[i], 1.0)
    return s


@njit
def outer_trace(x):
    M = np.outer(x, x)
    return np.trace(M @ M)


@njit
def empty_2d_f(x):
    A = np.empty((x.shape[0], 3), dtype=np.float64)
    for j in range(3):
        A[:, j] = x ** (j + 1)
    return np.sum(A.T @ A)


@njit
def prod_reduce(x):
    return np.prod(x) + np.prod(x[1:] * 2.0)


@njit
def cross_2arr(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            s += math.exp(-(x[i] - y[j]) ** 2)
    return s


@njit
def mask_where_assign(x):
    y = np.where(x > 0.9, x, 0.0)
    z = np.empty_like(x)
    z[:] = y
    z[0] = x[-1]
    return np.sum(z * x)


@njit
def argmax_2d(A):
    k = np.argmax(A)
    return A.ravel()[k] * np.sum(A)


@njit
def lstsq_like(A, b):
    x = np.linalg.lstsq(A, b)[0]
    return np.sum(x ** 2)


@njit
def cholesky_logdet(A):
    L = np.linalg.cholesky(A)
    return 2.0 * np.sum(np.log(np.diag(L)))


@njit
def eigh_sum(A):
    w, v = np.linalg.eigh(A)
    return np.sum(w * w)


@njit
def reversed_loop(x):
    s = 0.0
    for i in range(x.shape[0] - 1, -1, -1):
        s = s * 0.5 + x[i] * x[i]
    return s


@njit
def step_range(x):
    s = 0.0
    for i in range(0, x.shape[0], 2):
        s += x[i] * x[i + 1] if i + 1 < x.shape[0] else x[i]
    return s


@njit
def bubble_sort(x):
    y = x.copy()
    n = y.shape[0]
    for i in range(n):
        for j in range(n - 1 - i):
            if y[j] > y[j + 1]:
                t = y[j]
                y[j] = y[j + 1]
                y[j + 1] = t
    return np.sum(y * np.arange(1, n + 1))


@njit
def swap_inplace(x):
    n = x.shape[0]
    for i in range(n // 2):
        x[i], x[n - 1 - i] = x[n - 1 - i] * 2.0, x[i]
    return np.sum(x * np.arange(n))


@njit
def roll_like(x):
    y = np.empty_like(x)
    y[1:] = x[:-1]
    y[0] = x[-1]
    return np.sum(y * x * np.arange(x.shape[0]))


@njit
def complex_abs(x):
    s = 0.0
    for i in range(x.shape[0]):
        z = complex(x[i], 0.5 * x[i])
        z = z * z + 1j
        s += abs(z)
    return s


@njit
def struct_of_arrays_loop(pos, vel, dt):
    p = pos.copy()
    v = vel.copy()
    for _ in range(4):
        for i in range(p.shape[0]):
            a = -p[i]
            v[i] += dt * a
            p[i] += dt * v[i]
    return np.sum(p * p) + np.sum(v * v)


@njit
def nan_guard(x):
    s = 0.0
    for i in range(x.shape[0]):
        v = math.log(x[i] - 0.5) if x[i] > 0.5 else 0.0
        if not math.isnan(v):
            s += v * v
    return s


@njit
def any_all(x):
    s = np.sum(x * x)
    if np.any(x > 1.4):
        s *= 2.0
    if np.all(x > 0.0):
        s += np.sum(x)
    return s


@njit
def searchsorted_bin(x, edges):
    s = 0.0
    for i in range(x.shape[0]):
        k = np.searchsorted(edges, x[i])
        s += x[i] * x[i] * k
    return s


@njit
def linspace_trapz(a, b):
    t = np.linspace(a, b, 9)
    y = np.sin(t)
    s = 0.0
    for i in range(t.shape[0] - 1):
        s += 0.5 * (y[i] + y[i + 1]) * (t[i + 1] - t[i])
    return s


@njit
def arange_float(a):
    t = np.arange(0.0, 2.0, 0.25) * a
    return np.sum(np.exp(-t * t))


@njit
def full_like_ones(x):
    y = np.full_like(x, 2.5) * x
    z = np.ones_like(x) + y
    return np.sum(z * z)


@njit
def astype_cast(x):
    y = x.astype(np.float32)
    return float(np.sum(y * y))


@njit
def astype_int_trunc(x):
    k = (x * 3.0).astype(np.int64)
    return np.sum(k * x * x)


@njit
def triu_tril(A):
    return np.sum(np.triu(A) * 2.0 + np.tril(A, -1) ** 2)


@njit
def isclose_branch(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        if abs(x[i] - y[i]) < 0.05:
            s += x[i]
        else:
            s += x[i] * y[i]
    return s


def _pd(rng, n):
    M = rng.uniform(-1, 1, (n, n))
    return M @ M.T + n * np.eye(n)


REC = np.dtype([("m", np.float64), ("vx", np.float64), ("vy", np.float64)])


def _rec(rng, n):
    p = np.zeros(n, dtype=REC)
    p["m"] = rng.uniform(0.5, 1.5, n)
    p["vx"] = rng.uniform(-1, 1, n)
    p["vy"] = rng.uniform(-1, 1, n)
    return p


WILD = {
    "inplace_axpy": (inplace_axpy, lambda r: (_u(r, 6), _u(r, 6), 0.7), "float"),
    "step_slice": (step_slice, lambda r: (_u(r, 9),), "float"),
    "negative_stride": (negative_stride, lambda r: (_u(r, 7),), "float"),
    "reversed_copy_write": (reversed_copy_write, lambda r: (_u(r, 6),), "float"),
    "neg_stride_write": (neg_stride_write, lambda r: (_u(r, 6),), "float"),
    "bool_mask_assign": (bool_mask_assign, lambda r: (_u(r, 8),), "float"),
    "bool_mask_sum": (bool_mask_sum, lambda r: (_u(r, 8),), "float"),
    "where_clip": (where_clip, lambda r: (_u(r, 8),), "float"),
    "fancy_index": (fancy_index, lambda r: (_u(r, 6), np.array([3, 0, 5, 3, 1])), "float"),
    "fancy_scatter": (fancy_scatter, lambda r: (_u(r, 6), np.array([4, 1, 2])), "float"),
    "cumsum_cumprod": (cumsum_cumprod, lambda r: (_u(r, 6),), "float"),
    "diff_diff": (diff_diff, lambda r: (_u(r, 7),), "float"),
    "sort_weights": (sort_weights, lambda r: (_u(r, 7),), "float"),
    "argsort_driven": (argsort_driven, lambda r: (_u(r, 7),), "float"),
    "argmax_driven": (argmax_driven, lambda r: (_u(r, 7),), "float"),
    "maximum_minimum": (maximum_minimum, lambda r: (_u(r, 7), _u(r, 7)), "float"),
    "fmod_mod": (fmod_mod, lambda r: (_u(r, 6),), "float"),
    "floor_frac": (floor_frac, lambda r: (_u(r, 6),), "float"),
    "int_float_mix": (int_float_mix, lambda r: (_u(r, 6), 3), "float"),
    "float32_kernel": (float32_kernel, lambda r: (_u(r, 6, dtype=np.float32),), "float"),
    "float32_ufunc": (float32_ufunc, lambda r: (_u(r, 6, dtype=np.float32),), "float"),
    "tuple_of_arrays": (tuple_of_arrays, lambda r: ((_u(r, 5), _u(r, 5)),), "float"),
    "returns_tuple": (returns_tuple, lambda r: (_u(r, 5),), "tuple"),
    "returns_array": (returns_array, lambda r: (_u(r, 5),), "array"),
    "two_d_c": (two_d_c, lambda r: (_u(r, 12).reshape(3, 4),), "float"),
    "two_d_f": (two_d_f, lambda r: (np.asfortranarray(_u(r, 12).reshape(3, 4)),), "float"),
    "two_d_transpose_sum": (two_d_transpose_sum, lambda r: (_u(r, 12).reshape(3, 4),), "float"),
    "two_d_transpose_sum_f": (two_d_transpose_sum, lambda r: (np.asfortranarray(_u(r, 12).reshape(3, 4)),), "float"),
    "axis_sums": (axis_sums, lambda r: (_u(r, 12).reshape(3, 4),), "float"),
    "dot_matmul": (dot_matmul, lambda r: (_u(r, 12).reshape(3, 4), _u(r, 4)), "float"),
    "dot_matmul_f": (dot_matmul, lambda r: (np.asfortranarray(_u(r, 12).reshape(3, 4)), _u(r, 4)), "float"),
    "matmul_2d": (matmul_2d, lambda r: (_u(r, 6).reshape(2, 3), _u(r, 12).reshape(3, 4)), "float"),
    "linalg_solve": (linalg_solve, lambda r: (_pd(r, 3), _u(r, 3)), "float"),
    "linalg_inv_det": (linalg_inv_det, lambda r: (_pd(r, 3),), "float"),
    "linalg_norm": (linalg_norm, lambda r: (_u(r, 4), _u(r, 6).reshape(2, 3)), "float"),
    "rec_poly": (rec_poly, lambda r: (float(r.uniform(0.3, 1.2)), 4), "float"),
    "uses_globals": (uses_globals, lambda r: (_u(r, 7),), "float"),
    "early_return_loop": (early_return_loop, lambda r: (_u(r, 7), 2.0), "float"),
    "while_newton": (while_newton, lambda r: (float(r.uniform(0.5, 3.0)),), "float"),
    "try_raise": (try_raise, lambda r: (_u(r, 6),), "float"),
    "out_buffer": (out_buffer, lambda r: (_u(r, 6), np.zeros(6)), "float"),
    "alias_driver": (alias_driver, lambda r: (_u(r, 6),), "float"),
    "record_particles": (record_particles, lambda r: (_rec(r, 4),), "float"),
    "nbody_energy": (nbody_energy, lambda r: (_u(r, 12, -1, 1).reshape(4, 3), _u(r, 4)), "float"),
    "black_scholes": (black_scholes, lambda r: (_u(r, 4, 80, 120), _u(r, 4, 90, 110), _u(r, 4, 0.5, 2), 0.03, 0.25), "float"),
    "fir_filter": (fir_filter, lambda r: (_u(r, 8), _u(r, 3)), "float"),
    "iir_filter": (iir_filter, lambda r: (_u(r, 8), 0.6), "float"),
    "ewma_var": (ewma_var, lambda r: (_u(r, 8), 0.8), "float"),
    "logsumexp_stable": (logsumexp_stable, lambda r: (_u(r, 6),), "float"),
    "softmax_ce": (softmax_ce, lambda r: (_u(r, 5), _u(r, 5)), "float"),
    "mean_std": (mean_std, lambda r: (_u(r, 6),), "float"),
    "median_like": (median_like, lambda r: (_u(r, 7),), "float"),
    "percentile_interp": (percentile_interp, lambda r: (_u(r, 7),), "float"),
    "interp_table": (interp_table, lambda r: (_u(r, 5, 0.1, 0.9), np.linspace(0, 1, 6), _u(r, 6)), "float"),
    "closure_inner": (closure_inner, lambda r: (_u(r, 5), 0.9), "float"),
    "concat_stack": (concat_stack, lambda r: (_u(r, 4), _u(r, 3)), "float"),
    "reshape_ravel": (reshape_ravel, lambda r: (_u(r, 8),), "float"),
    "flatten_f": (flatten_f, lambda r: (np.asfortranarray(_u(r, 6).reshape(2, 3)),), "float"),
    "abs_sign": (abs_sign, lambda r: (_u(r, 7),), "float"),
    "hypot_atan2": (hypot_atan2, lambda r: (_u(r, 5), _u(r, 5)), "float"),
    "power_frac": (power_frac, lambda r: (_u(r, 5), 1.7), "float"),
    "int_pow_loop": (int_pow_loop, lambda r: (_u(r, 7),), "float"),
    "copyto_slice": (copyto_slice, lambda r: (_u(r, 5),), "float"),
    "fill_then_add": (fill_then_add, lambda r: (_u(r, 5),), "float"),
    "inplace_ops_array": (inplace_ops_array, lambda r: (_u(r, 5),), "float"),
    "min_max_builtin": (min_max_builtin, lambda r: (_u(r, 6),), "float"),
    "outer_trace": (outer_trace, lambda r: (_u(r, 4),), "float"),
    "empty_2d_f": (empty_2d_f, lambda r: (_u(r, 5),), "float"),
    "prod_reduce": (prod_reduce, lambda r: (_u(r, 5),), "float"),
    "cross_2arr": (cross_2arr, lambda r: (_u(r, 4), _u(r, 3)), "float"),
    "mask_where_assign": (mask_where_assign, lambda r: (_u(r, 6),), "float"),
    "argmax_2d": (argmax_2d, lambda r: (_u(r, 6).reshape(2, 3),), "float"),
    "lstsq_like": (lstsq_like, lambda r: (_u(r, 12).reshape(4, 3), _u(r, 4)), "float"),
    "cholesky_logdet": (cholesky_logdet, lambda r: (_pd(r, 3),), "float"),
    "eigh_sum": (eigh_sum, lambda r: (_pd(r, 3),), "float"),
    "reversed_loop": (reversed_loop, lambda r: (_u(r, 6),), "float"),
    "step_range": (step_range, lambda r: (_u(r, 7),), "float"),
    "bubble_sort": (bubble_sort, lambda r: (_u(r, 6),), "float"),
    "swap_inplace": (swap_inplace, lambda r: (_u(r, 6),), "float"),
    "roll_like": (roll_like, lambda r: (_u(r, 6),), "float"),
    "complex_abs": (complex_abs, lambda r: (_u(r, 5),), "float"),
    "struct_of_arrays_loop": (struct_of_arrays_loop, lambda r: (_u(r, 4), _u(r, 4), 0.1), "float"),
    "nan_guard": (nan_guard, lambda r: (_u(r, 6),), "float"),
    "any_all": (any_all, lambda r: (_u(r, 6),), "float"),
    "searchsorted_bin": (searchsorted_bin, lambda r: (_u(r, 6), np.linspace(0.2, 1.6, 5)), "float"),
    "linspace_trapz": (linspace_trapz, lambda r: (float(r.uniform(0, 0.5)), float(r.uniform(1, 2))), "float"),
    "arange_float": (arange_float, lambda r: (float(r.uniform(0.3, 1.2)),), "float"),
    "full_like_ones": (full_like_ones, lambda r: (_u(r, 5),), "float"),
    "astype_cast": (astype_cast, lambda r: (_u(r, 5),), "float"),
    "astype_int_trunc": (astype_int_trunc, lambda r: (_u(r, 5),), "float"),
    "triu_tril": (triu_tril, lambda r: (_u(r, 9).reshape(3, 3),), "float"),
    "isclose_branch": (isclose_branch, lambda r: (_u(r, 6), _u(r, 6)), "float"),
}


# ---- argument layouts, overlapping slices, views written through ----
@njit
def overlap_shift(x):
    y = x.copy()
    y[1:] = y[:-1] * 2.0
    return np.sum(y * y * np.arange(1, y.shape[0] + 1))


@njit
def overlap_reverse_assign(x):
    y = x.copy()
    y[:] = y[::-1] * y
    return np.sum(y * np.arange(1, y.shape[0] + 1))


@njit
def arg_inplace_reverse(x):
    r = x[::-1]
    for i in range(r.shape[0]):
        r[i] = r[i] * (i + 1)
    return np.sum(x * x)


@njit
def plain_sum_sq(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * (i + 1)
    return s


@njit
def two_args_write(x, y):
    for i in range(x.shape[0]):
        y[i] = x[i] * y[i] + 1.0
    return np.sum(y * x)


@njit
def record_write(p):
    for i in range(p.shape[0]):
        p[i].vx = p[i].vx * p[i].m
    s = 0.0
    for i in range(p.shape[0]):
        s += p[i].vx ** 2 + p[i].vy * p[i].m
    return s


@njit
def f_order_inplace(A):
    for j in range(A.shape[1]):
        for i in range(A.shape[0]):
            A[i, j] = A[i, j] * A[i, j] + j
    return np.sum(A * np.arange(A.shape[1]))


@njit
def mixed_order_matmul(A, B):
    return np.sum((A @ B) ** 2)


@njit
def reversed_cols_matvec(A, x):
    return np.sum((A[:, ::-1] @ x) ** 2)


@njit
def solve_f(A, b):
    return np.sum(np.linalg.solve(A, b) ** 2)


@njit
def tuple_float_array(x):
    return np.sum(x) ** 2, x * x


@njit
def float32_inplace(x):
    for i in range(1, x.shape[0]):
        x[i] = x[i] * x[i - 1] + np.float32(0.1)
    return np.sum(x)


@njit
def loop_continue(x):
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] < 0.7:
            continue
        s += math.sqrt(x[i]) * x[i]
    return s


@njit
def axis1_f(A):
    return np.sum(A.sum(axis=1) ** 2) + np.sum(np.cumsum(A) ** 2)


@njit
def quad_form(x, A):
    S = 0.5 * (A + A.T)
    return x @ S @ x


@njit
def computed_step(x, k):
    v = x[::-k]
    return np.sum(v * v * np.arange(1, v.shape[0] + 1))


@njit
def dup_index_add(x, idx):
    y = x.copy()
    y[idx] += x[:idx.shape[0]] ** 2
    return np.sum(y * y)


@njit
def where_scalar(x, a):
    return np.sum(np.where(x > 0.9, a * x, a))


@njit
def round_rint(x):
    return np.sum(np.round(x * 3.0) * x + np.rint(x) * x * x)


@njit
def try_except_inside(x):
    s = 0.0
    for i in range(x.shape[0]):
        try:
            if x[i] > 1.3:
                raise ValueError("big")
            s += x[i] * x[i]
        except Exception:
            s += 2.0 * x[i]
    return s


@njit
def trunc_copysign(x):
    s = 0.0
    for i in range(x.shape[0]):
        t = 3.0 * x[i]
        whole = math.trunc(t)
        fr = t - whole
        s += fr * fr + whole * x[i] + math.copysign(x[i], 0.5 - x[i])
    return s


@njit
def power_neg_base(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += (x[i] - 0.9) ** 3 + (x[i] - 0.9) ** 2.0
    return s


@njit
def minimum_reduce(x):
    return np.min(x * (2.0 - x)) + np.max(np.sin(x)) + np.amax(x[::2])


@njit
def view_chain(x):
    m = x.reshape((2, 3))
    c = m[:, 1]
    c *= 2.0
    m[0, :] += m[1, :]
    return np.sum(x * x * np.arange(6))


@njit
def global_tuple(x):
    s = 0.0
    for c in (0.5, 1.5, -0.25):
        s += c * np.sum(x ** 2)
    return s


@njit
def int_arg_array(x, w):
    return np.sum(x * w) * np.sum(x)


@njit
def empty_partial(x):
    y = np.empty(x.shape[0] + 2)
    y[0] = 0.0
    y[-1] = 0.0
    y[1:-1] = x
    return np.sum((y[2:] - y[:-2]) ** 2)


@njit
def matrix_power_loop(A):
    B = np.eye(A.shape[0])
    for _ in range(3):
        B = B @ A
    return np.trace(B)


@njit
def kron_outer_sum(x, y):
    return np.sum(np.outer(x, y) * np.outer(y, x).T)


@njit
def stack_2d(x, y):
    M = np.vstack((x, y))
    return np.sum(M.T @ M)


@njit
def norm_axis(A):
    s = 0.0
    for i in range(A.shape[0]):
        s += np.linalg.norm(A[i]) * i
    return s


@njit
def det_slogdet(A):
    sgn, ld = np.linalg.slogdet(A)
    return sgn * ld + np.linalg.det(A[:2, :2])


@njit
def pinv_sum(A):
    return np.sum(np.linalg.pinv(A))


@njit
def eigvals_sym(A):
    return np.sum(np.linalg.eigvalsh(A) ** 3)


@njit
def svd_sum(A):
    return np.sum(np.linalg.svd(A)[1])


@njit
def qr_sum(A):
    q, r = np.linalg.qr(A)
    return np.sum(np.abs(np.diag(r)))


def _fo(a):
    return np.asfortranarray(a)


_MORE = {
    "overlap_shift": (overlap_shift, lambda r: (_u(r, 6),), "float"),
    "overlap_reverse_assign": (overlap_reverse_assign, lambda r: (_u(r, 6),), "float"),
    "arg_inplace_reverse": (arg_inplace_reverse, lambda r: (_u(r, 6),), "float"),
    "noncontig_arg": (plain_sum_sq, lambda r: (_u(r, 12)[::2],), "float"),
    "negstride_arg": (plain_sum_sq, lambda r: (_u(r, 6)[::-1],), "float"),
    "two_args_write": (two_args_write, lambda r: (_u(r, 5), _u(r, 5)), "float"),
    "record_write": (record_write, lambda r: (_rec(r, 4),), "float"),
    "f_order_inplace": (f_order_inplace, lambda r: (_fo(_u(r, 6).reshape(2, 3)),), "float"),
    "mixed_order_matmul": (mixed_order_matmul, lambda r: (_fo(_u(r, 6).reshape(2, 3)), _u(r, 12).reshape(3, 4)), "float"),
    "reversed_cols_matvec": (reversed_cols_matvec, lambda r: (_u(r, 12).reshape(3, 4), _u(r, 4)), "float"),
    "solve_f": (solve_f, lambda r: (_fo(_pd(r, 3)), _u(r, 3)), "float"),
    "tuple_float_array": (tuple_float_array, lambda r: (_u(r, 4),), "tuple"),
    "float32_inplace": (float32_inplace, lambda r: (_u(r, 5, 0.3, 0.9, dtype=np.float32),), "float"),
    "loop_continue": (loop_continue, lambda r: (_u(r, 7),), "float"),
    "axis1_f": (axis1_f, lambda r: (_fo(_u(r, 6).reshape(2, 3)),), "float"),
    "quad_form": (quad_form, lambda r: (_u(r, 3), _u(r, 9).reshape(3, 3)), "float"),
    "computed_step": (computed_step, lambda r: (_u(r, 7), 2), "float"),
    "dup_index_add": (dup_index_add, lambda r: (_u(r, 6), np.array([1, 3, 1, 0])), "float"),
    "where_scalar": (where_scalar, lambda r: (_u(r, 6), 0.8), "float"),
    "round_rint": (round_rint, lambda r: (_u(r, 6),), "float"),
    "try_except_inside": (try_except_inside, lambda r: (_u(r, 6),), "float"),
    "trunc_copysign": (trunc_copysign, lambda r: (_u(r, 6),), "float"),
    "power_neg_base": (power_neg_base, lambda r: (_u(r, 6),), "float"),
    "minimum_reduce": (minimum_reduce, lambda r: (_u(r, 6),), "float"),
    "view_chain": (view_chain, lambda r: (_u(r, 6),), "float"),
    "global_tuple": (global_tuple, lambda r: (_u(r, 4),), "float"),
    "int_arg_array": (int_arg_array, lambda r: (_u(r, 4), np.array([1, -2, 3, 0])), "float"),
    "empty_partial": (empty_partial, lambda r: (_u(r, 5),), "float"),
    "matrix_power_loop": (matrix_power_loop, lambda r: (_u(r, 9).reshape(3, 3),), "float"),
    "kron_outer_sum": (kron_outer_sum, lambda r: (_u(r, 3), _u(r, 3)), "float"),
    "stack_2d": (stack_2d, lambda r: (_u(r, 3), _u(r, 3)), "float"),
    "norm_axis": (norm_axis, lambda r: (_u(r, 6).reshape(2, 3),), "float"),
    "det_slogdet": (det_slogdet, lambda r: (_pd(r, 3),), "float"),
    "pinv_sum": (pinv_sum, lambda r: (_u(r, 6).reshape(3, 2),), "float"),
    "eigvals_sym": (eigvals_sym, lambda r: (_pd(r, 3),), "float"),
    "svd_sum": (svd_sum, lambda r: (_u(r, 6).reshape(3, 2),), "float"),
    "qr_sum": (qr_sum, lambda r: (_u(r, 9).reshape(3, 3) + 2 * np.eye(3),), "float"),
}
WILD.update(_MORE)


# -- session 26: tuples of arrays, views and slices written in place, output arguments,
# arrays returned and reused; wild_campaign.py checks these with every transform
# (grad/vjp, jvp, hessian, hvp, jacfwd, jacrev)

@njit
def tuple_state_step(state, dt):
    pos, vel = state
    for _ in range(3):
        pos += dt * vel
        vel -= dt * np.sin(pos)
    return np.sum(pos * pos) + np.sum(vel * vel)


@njit
def tuple_unpack_reuse(t):
    a, b = t
    c = a * b
    a2 = c + a
    return np.sum(a2 * b) + np.sum(c * c)


@njit
def ufunc_out_args(x, out):
    np.multiply(x, x, out)
    np.add(out, x, out)
    return np.sum(out * x)


@njit
def _scaled_copy(x, s):
    y = x * s
    return y


@njit
def returned_reused(x):
    y = _scaled_copy(x, 1.5)
    y *= y
    z = _scaled_copy(y, 0.5)
    z[0] = z[-1] * y[1]
    return np.sum(z * x)


@njit
def overlapping_slices_inplace(x):
    for i in range(1, x.shape[0]):
        x[i] *= x[i - 1] * 0.5 + 1.0
    return np.sum(x * x)


@njit
def strided_view_write(x):
    v = x[::2]
    v[:] = v * v + 0.25
    return np.sum(x * np.arange(x.shape[0]))


@njit
def reversed_view_write(x):
    r = x[::-1]
    for i in range(1, r.shape[0]):
        r[i] = r[i] * r[i - 1]
    return np.sum(x)


@njit
def row_views_update(A):
    for i in range(1, A.shape[0]):
        A[i, :] = A[i, :] * A[i - 1, :] + 0.1
    return np.sum(A * A)


@njit
def column_view_inplace(A):
    c = A[:, 1]
    c *= 2.0
    c += A[:, 0]
    return np.sum(A * A)


@njit
def tuple_of_views(x):
    t = (x[:3], x[3:])
    return np.dot(t[0], t[1][:3]) + np.sum(t[1] ** 3)


@njit
def returns_tuple_views(x):
    return x[1:] * x[:-1], x[::-1] * x


@njit
def out_two_inputs(x, y, out):
    out[:] = x * y
    out += x
    return np.sum(out * out)


@njit
def accumulate_modulo(x, out):
    for i in range(x.shape[0]):
        out[i % out.shape[0]] += x[i] ** 2
    return np.sum(out * out)


@njit
def swap_halves_inplace(x):
    n = x.shape[0] // 2
    tmp = x[:n].copy()
    x[:n] = x[n:2 * n]
    x[n:2 * n] = tmp
    return np.sum(x * np.arange(x.shape[0]) * x)


@njit
def tuple_member_written_returned(t):
    a, b = t
    a[0] = b[0] * a[1]
    a[1:] *= b[:-1]
    return a


@njit
def fill_diag_matmul(A):
    B = A.copy()
    np.fill_diagonal(B, 2.0)
    return np.sum(B @ A)


@njit
def ellipsis_assign(x):
    y = np.empty_like(x)
    y[...] = x * x
    return np.sum(y * x)


@njit
def roll_product(x):
    return np.sum(np.roll(x, 2) * x)


@njit
def buffer_reused_loop(x):
    buf = np.empty_like(x)
    for _ in range(3):
        buf[:] = np.sin(x)
        x = buf * x + 0.1
    return np.sum(x)


@njit
def gauss_seidel_inplace(u):
    for _ in range(2):
        for i in range(1, u.shape[0] - 1):
            u[i] = 0.5 * (u[i - 1] + u[i + 1]) + 0.1 * u[i] * u[i]
    return np.sum(u * u)


@njit
def tuple_rebound(t):
    for _ in range(3):
        t = (t[0] + t[1] * 0.5, t[0] * t[1])
    return np.sum(t[0]) + np.sum(t[1])


@njit
def array_and_scalar_tuple(t):
    x, s = t
    return np.sum(x * s) + s * s * np.sum(x)


@njit
def reshape_view_write(x):
    m = x.reshape((2, x.shape[0] // 2))
    m[0] += m[1] * m[1]
    return np.sum(x * x)


@njit
def ravel_view_write(A):
    r = A.ravel()
    r[::2] *= 3.0
    return np.sum(A * A * A)


@njit
def returns_out_argument(x, out):
    out[:] = x ** 2
    out[1:] += out[:-1]
    return out


@njit
def nested_tuple_arg(t):
    x, (y, z) = t
    return np.sum(x * y) + np.sum(np.exp(z) * x)


@njit
def cumsum_into_slice(x):
    y = np.zeros(x.shape[0] + 2)
    y[2:] = np.cumsum(x)
    y[:2] = x[:2] * x[-1]
    return np.sum(y * y)


@njit
def inplace_normalize_rows(A):
    for i in range(A.shape[0]):
        A[i] /= np.sqrt(np.sum(A[i] * A[i]))
    return np.sum(A[0] * A[1])


WILD26 = {
    "tuple_state_step": (tuple_state_step, lambda r: ((_u(r, 4), _u(r, 4)), 0.1), "float"),
    "tuple_unpack_reuse": (tuple_unpack_reuse, lambda r: ((_u(r, 5), _u(r, 5)),), "float"),
    "ufunc_out_args": (ufunc_out_args, lambda r: (_u(r, 5), np.zeros(5)), "float"),
    "returned_reused": (returned_reused, lambda r: (_u(r, 5),), "float"),
    "overlapping_slices_inplace": (overlapping_slices_inplace, lambda r: (_u(r, 6),), "float"),
    "strided_view_write": (strided_view_write, lambda r: (_u(r, 7),), "float"),
    "reversed_view_write": (reversed_view_write, lambda r: (_u(r, 6),), "float"),
    "row_views_update": (row_views_update, lambda r: (_u(r, 12).reshape(3, 4),), "float"),
    "column_view_inplace": (column_view_inplace, lambda r: (_u(r, 12).reshape(4, 3),), "float"),
    "tuple_of_views": (tuple_of_views, lambda r: (_u(r, 7),), "float"),
    "returns_tuple_views": (returns_tuple_views, lambda r: (_u(r, 5),), "tuple"),
    "out_two_inputs": (out_two_inputs, lambda r: (_u(r, 5), _u(r, 5), np.zeros(5)), "float"),
    "accumulate_modulo": (accumulate_modulo, lambda r: (_u(r, 7), np.zeros(3)), "float"),
    "swap_halves_inplace": (swap_halves_inplace, lambda r: (_u(r, 6),), "float"),
    "tuple_member_written_returned": (tuple_member_written_returned, lambda r: ((_u(r, 4), _u(r, 4)),), "array"),
    "fill_diag_matmul": (fill_diag_matmul, lambda r: (_u(r, 9).reshape(3, 3),), "float"),
    "ellipsis_assign": (ellipsis_assign, lambda r: (_u(r, 5),), "float"),
    "roll_product": (roll_product, lambda r: (_u(r, 6),), "float"),
    "buffer_reused_loop": (buffer_reused_loop, lambda r: (_u(r, 5),), "float"),
    "gauss_seidel_inplace": (gauss_seidel_inplace, lambda r: (_u(r, 6),), "float"),
    "tuple_rebound": (tuple_rebound, lambda r: ((_u(r, 4), _u(r, 4)),), "float"),
    "array_and_scalar_tuple": (array_and_scalar_tuple, lambda r: ((_u(r, 4), 0.7),), "float"),
    "reshape_view_write": (reshape_view_write, lambda r: (_u(r, 6),), "float"),
    "ravel_view_write": (ravel_view_write, lambda r: (_u(r, 6).reshape(2, 3),), "float"),
    "returns_out_argument": (returns_out_argument, lambda r: (_u(r, 5), np.zeros(5)), "array"),
    "nested_tuple_arg": (nested_tuple_arg, lambda r: ((_u(r, 4), (_u(r, 4), _u(r, 4))),), "float"),
    "cumsum_into_slice": (cumsum_into_slice, lambda r: (_u(r, 5),), "float"),
    "inplace_normalize_rows": (inplace_normalize_rows, lambda r: (_u(r, 6).reshape(2, 3),), "float"),
}
WILD.update(WILD26)
