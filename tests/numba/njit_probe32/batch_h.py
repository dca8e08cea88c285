from harness import *
from numba import njit, prange

@reg(full=True)
@njit(parallel=True)
def par_arrayexpr(x):
    y = np.exp(-x) * x + np.sin(x) ** 2
    return np.sum(y) + np.sum(y * x)

@reg(full=True)
@njit(parallel=True)
def par_prange_out(x):
    n = x.size
    out = np.empty(n)
    for i in prange(n):
        out[i] = x[i] * x[(i + 1) % n] + math.cos(x[i])
    return np.sum(out * out)

@reg()
@njit(parallel=True)
def par_prange_prod(x):
    p = 1.0
    for i in prange(x.size):
        p *= (1.0 + 0.1 * x[i])
    return p

@reg()
@njit(parallel=True)
def par_array_reduction(x):
    A = x.reshape(4, 3)
    acc = np.zeros(3)
    for i in prange(4):
        acc += A[i] * A[i]
    return np.sum(acc * np.array([1.0, 2.0, 3.0]))

@reg()
@njit(parallel=True)
def par_min_cond(x):
    m = 1e300
    for i in prange(x.size):
        v = (x[i] - 0.3) ** 2
        if v < m:
            m = v
    return m

@reg()
@njit(parallel=True)
def par_nested(x):
    A = x.reshape(3, 4)
    s = 0.0
    for i in prange(3):
        for j in prange(4):
            s += A[i, j] * A[i, (j + 1) % 4]
    return s

@reg()
@njit(parallel=True)
def par_private_array(x):
    A = x.reshape(3, 4)
    out = np.zeros(3)
    for i in prange(3):
        tmp = np.empty(4)
        for j in range(4):
            tmp[j] = A[i, j] ** 2
        out[i] = np.sum(tmp) * A[i, 0]
    return np.sum(out)

@reg(full=True)
@njit(fastmath=True)
def fastmath_loop(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * x[i] / (1.0 + x[i] * x[i]) + math.sqrt(abs(x[i]) + 1.0)
    return s

@reg()
@njit(fastmath=True)
def fastmath_arrays(x):
    return np.sum(np.exp(x) / np.sum(np.exp(x)) * x) + np.max(x) * np.min(x)

@reg()
@njit(error_model="numpy")
def errmodel_numpy(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] / (x[i] + 2.0) + (x[i] * 7.0) % 1.3
    return s

@reg()
@njit(boundscheck=True)
def boundscheck_(x):
    s = 0.0
    for i in range(x.size - 1):
        s += x[i] * x[i + 1]
    return s

@njit(inline="always")
def _inl(a, b):
    return a * math.exp(b)

@reg()
@njit
def inline_always(x):
    s = 0.0
    for i in range(x.size - 1):
        s += _inl(x[i], x[i + 1])
    return s

@reg()
@njit(nogil=True, cache=True)
def nogil_cache(x):
    return np.sum(np.tanh(x) * x[::-1])

@reg()
@njit(parallel=True, fastmath=True)
def par_fast_norm(x):
    s = 0.0
    for i in prange(x.size):
        s += x[i] * x[i]
    return math.sqrt(s) + np.sum(x / math.sqrt(s))

if __name__ == "__main__":
    main()
