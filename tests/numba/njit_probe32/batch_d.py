from harness import *
from numba import njit, literal_unroll

@reg(full=True)
@njit
def iterate_rows(x):
    A = x.reshape(4, 3)
    s = 0.0
    for row in A:
        s += np.dot(row, row) * row[0]
    for row in A.T:
        s += row.sum() ** 2
    return s

@reg()
@njit
def row_assign(x):
    A = np.zeros((3, 4))
    for i in range(3):
        A[i, :] = x[4 * i:4 * i + 4] * (i + 1)
    A[:, 1] = A[:, 0] * A[:, 3]
    return np.sum(A ** 2)

@reg()
@njit
def flip_ravel(x):
    A = x.reshape(3, 4)
    B = np.ascontiguousarray(A.T)
    r = B.ravel()
    f = np.flip(x)
    return np.sum(r * f) + np.sum(A.flatten() * x[::-1])

@reg()
@njit
def repeat_tile(x):
    a = np.repeat(x[:3], 2)
    b = np.repeat(x[3:6], 2)[::-1].copy()
    return np.sum(a * b) + np.sum(np.full_like(x, 2.0) * x)

@reg()
@njit
def linspace_active(x):
    t = np.linspace(x[0], x[1] + 2.0, 7)
    return np.sum(np.sin(t) * t)

@reg()
@njit
def tri_diag_trace(x):
    A = x[:9].reshape(3, 3)
    return np.sum(np.tril(A) ** 2) + np.sum(np.triu(A, 1) * 3.0) + np.trace(A @ A) + np.sum(np.diag(A) ** 3)

@reg()
@njit
def var_std_median(x):
    return np.var(x) + np.std(x[:5]) * 2.0 + np.median(x) + np.mean(x * x)

@reg()
@njit
def cross_kron(x):
    c = np.cross(x[:3], x[3:6])
    K = np.kron(x[:2], x[2:5])
    return np.sum(c * c) + np.sum(K)

@reg()
@njit
def convolve_(x):
    k = np.array([0.25, 0.5, 0.25])
    y = np.convolve(x, k)
    z = np.convolve(x[:4], x[4:7])
    return np.sum(y * y) + np.sum(z)

@reg(full=True)
@njit
def linalg_misc(x):
    A = x[:9].reshape(3, 3) + 4.0 * np.eye(3)
    S = A @ A.T
    L = np.linalg.cholesky(S)
    sign, ld = np.linalg.slogdet(A)
    return np.sum(L) + ld + np.linalg.det(S) * 1e-3 + np.trace(np.linalg.inv(S))

@reg()
@njit
def eigh_(x):
    A = x[:9].reshape(3, 3)
    S = A + A.T
    w, V = np.linalg.eigh(S)
    return w[-1] + w[0] ** 2

@reg()
@njit
def qr_(x):
    A = x.reshape(4, 3)
    Q, R = np.linalg.qr(A)
    return np.sum(np.abs(np.diag(R)))

@reg()
@njit
def lstsq_pinv(x):
    A = x.reshape(4, 3) + np.eye(4, 3)
    b = np.array([1.0, 2.0, 0.5, -1.0])
    z = np.linalg.pinv(A) @ b
    return np.sum(z * z)

@reg()
@njit
def ufunc_misc(x):
    return (np.sum(np.arctan2(x[:6], x[6:] + 2.0)) + np.sum(np.hypot(x[:6], x[6:])) + np.sum(np.logaddexp(x[:6], x[6:]))
            + np.sum(np.copysign(x[:6] ** 2, x[6:])) + np.sum(np.sign(x) * x) + np.sum(np.fmax(x, 0.1) * np.fmin(x, 0.6)))

@reg()
@njit
def nan_funcs(x):
    y = x.copy()
    y[2] = np.nan
    return np.nansum(y * y) + np.nanmean(y) + np.nanmax(y)

@reg()
@njit
def clip_ptp(x):
    return np.sum(np.clip(x, -0.2, 0.7) ** 2) + np.ptp(x) + np.sum(np.abs(x) * np.round(x * 3))

@reg()
@njit
def raise_path(x):
    s = 0.0
    for v in x:
        if v > 100.0:
            raise ValueError("too big")
        s += v * v * v
    return s

@reg()
@njit
def literal_unroll_tuple(x):
    ws = (1.0, 2, 0.5)
    s = 0.0
    for w in literal_unroll(ws):
        s += w * np.sum(x * x)
    return s

@reg()
@njit
def random_noise_const(x):
    np.random.seed(3)
    noise = np.random.standard_normal(x.size)
    return np.sum((x + 0.1 * noise) ** 2)

@reg()
@njit
def cumprod_partial(x):
    c = np.cumprod(1.0 + 0.1 * x)
    return c[-1] + np.sum(c[::3])

@reg()
@njit
def polyval_like(x):
    p = x[:4]
    t = np.array([0.1, 0.5, 1.3])
    v = np.zeros(3)
    for c in p:
        v = v * t + c
    return np.sum(v * v)

@reg()
@njit
def histogram_weights(x):
    # binning decides, weights differentiate
    edges = np.linspace(-1.0, 1.5, 6)
    h = np.zeros(5)
    for v in x:
        b = np.searchsorted(edges, v) - 1
        if 0 <= b < 5:
            h[b] += v * v
    return np.sum(h * np.arange(1.0, 6.0))

@reg()
@njit
def partition_like(x):
    y = x.copy()
    y.sort()
    return y[5] + y[6] + np.sum(y[-3:] ** 2)

@reg()
@njit
def unique_counts(x):
    k = np.unique(np.floor(x * 2))
    return np.sum(x[:k.size] ** 2)

if __name__ == "__main__":
    main()
