from harness import *
from numba import njit, vectorize, guvectorize, stencil

@reg(full=True)
@njit
def list_comprehension(x):
    L = [x[i] ** 2 + math.sin(x[i]) for i in range(x.size)]
    s = 0.0
    for v in L:
        s += v * v
    return s + sum(L) + L[3] * L[4]

@reg()
@njit
def list_append_pop(x):
    L = []
    for v in x:
        if v > 0:
            L.append(v * v)
    last = L.pop()
    return sum(L) * last + len(L)

@reg(full=True)
@njit
def array_from_list(x):
    a = np.array([x[0], x[1] * 2.0, math.exp(x[2])])
    b = np.asarray([x[3] * x[4], x[5]])
    t = (x[6], x[7] ** 2)
    c = np.array(t)
    return np.sum(a * a) + np.sum(b) * np.sum(c)

@reg()
@njit
def list_of_arrays_builtin(x):
    L = [x[:4], x[4:8] * 2.0, x[8:] ** 2]
    s = 0.0
    for a in L:
        s += np.dot(a, a)
    return s

@vectorize(["float64(float64, float64)"])
def _vsoft(a, b):
    return math.log(math.exp(a) + math.exp(b))

@reg()
@njit
def vectorize_ufunc(x):
    return np.sum(_vsoft(x[:6], x[6:]))

@guvectorize(["void(float64[:], float64[:])"], "(n)->()")
def _gu_norm(v, out):
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i] * v[i]
    out[0] = math.sqrt(s)

@reg()
@njit
def guvectorize_call(x):
    A = x.reshape(3, 4)
    out = np.empty(3)
    _gu_norm(A, out)
    return np.sum(out ** 3)

@stencil
def _lap(a):
    return a[-1] - 2 * a[0] + a[1]

@reg()
@njit
def stencil_call(x):
    y = _lap(x * x)
    return np.sum(y * y)

@njit
def _integrate(f, a, b, n):
    h = (b - a) / n
    s = 0.5 * (f(a) + f(b))
    for i in range(1, n):
        s += f(a + i * h)
    return s * h

@njit
def _bell(t):
    return math.exp(-t * t)

@reg()
@njit
def function_argument(x):
    return _integrate(_bell, x[0], x[1] + 2.0, 50)

@reg()
@njit
def random_loc(x):
    np.random.seed(0)
    s = 0.0
    for i in range(x.size):
        s += np.random.normal(x[i], 0.5) ** 2 + np.random.uniform(x[i], x[i] + 1.0)
    return s

@reg()
@njit
def float32_blas(x):
    A = x.reshape(3, 4).astype(np.float32)
    v = np.ones(4, np.float32)
    w = A @ v
    return float(np.sum(w * w))

@reg()
@njit
def solve_2d_rhs(x):
    A = x[:9].reshape(3, 3) + 3.0 * np.eye(3)
    B = np.stack((x[9:12], x[9:12] ** 2)).T.copy()
    Z = np.linalg.solve(A, B)
    return np.sum(Z * Z) + np.linalg.det(A.T)

@reg()
@njit
def eigvalsh_(x):
    A = x[:9].reshape(3, 3)
    return np.sum(np.linalg.eigvalsh(A + A.T) ** 2)

@reg()
@njit
def sum_axis_neg(x):
    A = x.reshape(2, 2, 3)
    return np.sum(A.sum(axis=-1) ** 2) + np.sum(np.sum(A, axis=0) * A[1])

@reg()
@njit
def range_steps(x):
    s = 0.0
    for i in range(x.size - 1, 0, -2):
        s += x[i] * x[i - 1]
    for i in range(0, x.size, 3):
        s += x[i] ** 3
    return s

@reg()
@njit
def tuple_of_arrays_helper(x):
    def split(v):
        return v[:6] * 2.0, v[6:] - 1.0
    a, b = split(x)
    a[0] = b[0] * b[1]
    return np.sum(a * b)

@reg()
@njit
def empty_then_fill_cond(x):
    y = np.empty(12)
    for i in range(12):
        if x[i] > 0.2:
            y[i] = x[i] ** 2
        else:
            y[i] = -x[i]
    return np.sum(y * np.arange(12))

@reg()
@njit
def sum_dtype_mean_int(x):
    k = np.arange(12)
    return np.sum(x * k) / np.sum(k) + np.mean(k * x * x)

@reg()
@njit
def matrix_exp_taylor(x):
    A = x[:9].reshape(3, 3) * 0.3
    E = np.eye(3); T = np.eye(3)
    for k in range(1, 12):
        T = T @ A / k
        E = E + T
    return np.trace(E) + E[0, 2]

if __name__ == "__main__":
    main()
