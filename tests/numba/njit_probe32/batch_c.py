from harness import *
from numba import njit, prange
from numba.typed import List

COEFS = np.array([0.3, -1.2, 0.7, 2.0])
SCALE = 1.5

@njit
def _stats(v):
    return v.mean(), v.std(), v.min()

@reg(full=True)
@njit
def tuple_unpack(x):
    m, s, mn = _stats(x)
    a, b = x[0] * m, x[1] + s
    return a * b + mn

@reg()
@njit
def early_return_loop(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] * x[i]
        if s > 2.0:
            return s * x[i]
    return -s

@njit
def _helper_kw(v, scale=2.0, power=2, shift=0.0):
    return np.sum((v * scale + shift) ** power)

@reg(full=True)
@njit
def helper_defaults(x):
    return _helper_kw(x) + _helper_kw(x[:4], power=3) + _helper_kw(x, shift=x[0], scale=0.5)

@reg()
@njit
def global_consts(x):
    s = 0.0
    for k in range(COEFS.size):
        s += COEFS[k] * x[k] ** (k + 1)
    return s * SCALE

@njit
def _fact_rec(v, i):
    if i == 0:
        return v[0]
    return v[i] * _fact_rec(v, i - 1) + math.sin(v[i])

@reg()
@njit
def recursion(x):
    return _fact_rec(x, 6)

@njit
def _pow_rec(a, n):
    if n == 0:
        return 1.0
    h = _pow_rec(a, n // 2)
    return h * h * (a if n % 2 else 1.0)

@reg()
@njit
def recursion_scalar(x):
    return _pow_rec(x[0], 7) + _pow_rec(x[1], 4)

@reg()
@njit
def typed_list(x):
    L = List()
    L.append(x[:4]); L.append(x[4:8] * 2.0); L.append(x[8:])
    s = 0.0
    for a in L:
        s += np.sum(a * a)
    return s

@reg(full=True)
@njit
def math_special(x):
    return (math.erf(x[0]) + math.gamma(1.5 + x[1] ** 2) + math.lgamma(2.0 + x[2]) + math.atan2(x[3], x[4])
            + math.hypot(x[5], x[6]) + math.expm1(x[7]) + math.log1p(x[8] ** 2) + math.erfc(x[9]))

@reg()
@njit
def int_powers(x):
    s = 0.0
    for i in range(x.size):
        s += x[i] ** 2 + x[i] ** 3 - x[i] ** (-2) * 0.01 + x[i] ** (i % 4)
    return s

@reg()
@njit
def minmax_builtins(x):
    s = 0.0
    for i in range(x.size - 1):
        s += max(x[i], x[i + 1]) * min(x[i], 0.5) + abs(x[i]) ** 1.5
    return s + max(x[0], x[1], x[2])

@reg()
@njit(parallel=True)
def prange_reduce(x):
    s = 0.0
    for i in prange(x.size):
        s += math.sin(x[i]) * x[i]
    return s

@reg()
@njit(parallel=True)
def prange_2d(x):
    A = x.reshape(3, 4)
    out = np.zeros(3)
    for i in prange(3):
        acc = 0.0
        for j in range(4):
            acc += A[i, j] ** 2 * j
        out[i] = acc
    return np.sum(out * out)

@reg()
@njit(parallel=True)
def prange_max_reduce(x):
    m = -1e300
    for i in prange(x.size):
        m = max(m, x[i] * x[i])
    return m

@reg()
@njit
def closure_inner(x):
    k = x[0]
    def g(t):
        return math.exp(-k * t) * t
    s = 0.0
    for i in range(1, x.size):
        s += g(x[i])
    return s

@reg()
@njit
def while_true_break(x):
    i = 0; s = 0.0
    while True:
        s += x[i] * (i + 1)
        i += 1
        if i >= x.size or s > 3.0:
            break
    return s * s

@reg()
@njit
def tuple_state_loop(x):
    a, b = x[0], x[1]
    for _ in range(10):
        a, b = b, a * 0.5 + math.tanh(b)
    return a + 2 * b

@reg()
@njit
def enumerate_zip(x):
    s = 0.0
    for i, (a, b) in enumerate(zip(x[:6], x[6:])):
        s += (i + 1) * a * b
    return s

@reg()
@njit
def float_int_mix(x):
    s = 0.0
    for i in range(x.size):
        k = int(x[i] * 3)
        s += x[i] * k + math.floor(x[i] * 2.0) * x[i] + (x[i] % 0.4) ** 2
    return s

@reg()
@njit
def nested_calls_arrays(x):
    def sq(v): return v * v
    return np.sum(sq(sq(x[:4]) - x[4:8])) + np.sum(np.exp(-sq(x)))

@reg()
@njit
def sigmoid_logsumexp(x):
    m = np.max(x)
    lse = m + np.log(np.sum(np.exp(x - m)))
    sig = 1.0 / (1.0 + np.exp(-x))
    return lse + np.sum(sig * x)

@reg()
@njit
def softplus_branches(x):
    s = 0.0
    for v in x:
        if v > 20: s += v
        elif v < -20: s += math.exp(v)
        else: s += math.log1p(math.exp(v))
    return s

if __name__ == "__main__":
    main()
