from harness import *
from numba import njit

@reg(full=True)
@njit
def col_views(x):
    A = x.reshape(3, 4)
    s = 0.0
    for j in range(4):
        c = A[:, j]
        s += np.dot(c, c) * (j + 1)
    return s + A[1, ::2].sum() ** 2

@reg()
@njit
def step_reverse_views(x):
    a = x[::2]; b = x[::-1]; c = x[1::3]
    return np.dot(a, b[:a.size]) + (c * c[::-1]).sum()

@reg(full=True)
@njit
def transpose_matmul(x):
    A = x.reshape(3, 4)
    B = A.T @ A
    return np.sum(B * B) + (A.T)[2, 1]

@reg()
@njit
def inplace_view_row(x):
    A = x.reshape(3, 4).copy()
    v = A[1]
    v += x[:4] * 2.0
    w = A[:, 2]
    w *= 3.0
    return np.sum(A * A)

@reg()
@njit
def inplace_view_neg(x):
    y = x.copy()
    r = y[::-1]
    r[:6] += y[:6]   # overlapping read/write: y[11-i] += y[i] sequential semantics
    return np.sum(y * np.arange(12.0))

@reg(full=True)
@njit
def matvec_views(x):
    A = x.reshape(3, 4)
    v = x[8:]
    u = A[:, :3] @ x[::4]
    return np.sum(u ** 2) + np.dot(A[0], v)

@reg()
@njit
def broadcast_ops(x):
    A = x.reshape(3, 4)
    r = A - A.sum(axis=0) / 3.0
    c = A * x[:3].reshape(3, 1)
    return np.sum(r * r) + np.sum(c)

@reg(full=True)
@njit
def cumsum_diff(x):
    c = np.cumsum(x * x)
    d = np.diff(x)
    return np.sum(c * 0.1) + np.sum(d ** 3) + c[-1] * d[0]

@reg()
@njit
def interp_active_x(x):
    xp = np.array([-1.0, -0.2, 0.3, 0.7, 1.5])
    fp = np.array([1.0, 2.0, 0.5, -1.0, 3.0])
    return np.sum(np.interp(x, xp, fp) * x)

@reg()
@njit
def interp_active_fp(x):
    xp = np.linspace(0.0, 1.0, 6)
    return np.sum(np.interp(np.array([0.05, 0.5, 0.93, 0.7]), xp, x[:6]))

@reg()
@njit
def interp_active_xp(x):
    xp = np.cumsum(np.abs(x[:5]) + 0.1)
    fp = np.array([1.0, 2.0, 0.5, -1.0, 3.0])
    return np.sum(np.interp(np.array([0.5, 1.0, 1.7]), xp, fp))

@reg()
@njit
def searchsorted_bins(x):
    edges = np.array([-0.5, 0.0, 0.4, 0.8])
    idx = np.searchsorted(edges, x)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    return np.sum(w[idx] * x * x)

@reg(full=True)
@njit
def sort_then_index(x):
    s = np.sort(x)
    o = np.argsort(x)
    return np.sum(s[:4] * x[o[-4:]]) + s[-1] ** 2

@reg()
@njit
def where_mask(x):
    y = np.where(x > 0.3, np.exp(x), x * x)
    m = x < 0.0
    return np.sum(y) + np.sum(x[m] ** 3) + np.sum(np.where(m, 0.0, x))

@reg()
@njit
def mask_assign(x):
    y = x.copy()
    y[y < 0] = 0.0
    y[x > 1.0] *= 0.5
    return np.sum(y * y * x)

@reg(full=True)
@njit
def gather_scatter_repeat(x):
    idx = np.array([0, 3, 3, 5, 0, 0, 11])
    g = x[idx]
    out = np.zeros(12)
    for k in range(idx.size):
        out[idx[k]] += g[k] * g[k]
    out[idx] += 1.0       # numpy fancy += (last write wins)
    return np.sum(out * x)

@reg()
@njit
def concat_stack(x):
    a = np.concatenate((x[:3], x[5:8] * 2.0, x[-2:]))
    B = np.stack((x[:4], x[4:8], x[8:]))
    return np.sum(a * a) + np.sum(B[:, 1] * B[:, 2]) + B.sum()

@reg()
@njit
def outer_roll(x):
    M = np.outer(x[:4], x[4:8])
    r = np.roll(x, 3)
    return np.sum(M * M) + np.dot(r, x)

@reg(full=True)
@njit
def axis_reductions(x):
    A = x.reshape(3, 4)
    return np.sum(A.sum(axis=1) ** 2) + np.sum(A[:, 0] * A[:, 3]) + np.sum((np.sum(A * A, axis=0) / 3.0) * A.sum(axis=0)) + np.sum(np.sum(x.reshape(2, 2, 3), axis=1) ** 2)

@reg()
@njit
def argmax_select(x):
    i = np.argmax(x)
    j = np.argmin(x)
    return x[i] * x[j] + np.max(x) ** 2 + np.min(x * x)

@reg()
@njit
def reshape_view(x):
    A = x[::2].copy().reshape(2, 3)[:, ::-1]
    B = x[1::2].copy().reshape(3, 2)
    return np.sum(A @ B)

@reg()
@njit
def zeros_2d_fill(x):
    n = 3; m = 4
    Z = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            Z[i, j] = x[i * m + j] * (i - j)
    E = np.empty_like(Z)
    E[:] = Z * Z
    return E.sum() + Z[2].sum()

@reg()
@njit
def float32_mix(x):
    y = x.astype(np.float32)
    w = np.ones(12, dtype=np.float32) * np.float32(0.5)
    return float(np.sum(y * w)) + np.sum(x * x)

@reg()
@njit
def complex_math(x):
    z = x[0] + 1j * x[1]
    w = z * z + np.exp(1j * x[2]) * x[3]
    return abs(w) + (w * np.conj(z)).real + np.angle(z)

@reg()
@njit
def complex_array(x):
    z = x[:6] + 1j * x[6:]
    f = np.abs(z) ** 2 + (z * z).imag
    return np.sum(f)

@reg()
@njit
def hypot_norm(x):
    A = x.reshape(4, 3)
    return np.sum(np.sqrt(np.sum(A * A, axis=1))) + np.linalg.norm(x[:4] - x[4:8])

if __name__ == "__main__":
    main()
