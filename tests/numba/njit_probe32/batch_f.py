from harness import *
from numba import njit

@reg(full=True)
@njit
def buffer_reuse(x):
    buf = np.empty(4)
    s = 0.0
    for it in range(5):
        for j in range(4):
            buf[j] = math.sin(x[j] * (it + 1) + s)
        s += buf @ buf
    return s

@reg(full=True)
@njit
def pingpong(x):
    u = x.copy(); un = np.empty_like(u)
    for step in range(8):
        un[0] = u[0]; un[-1] = u[-1]
        for i in range(1, u.size - 1):
            un[i] = u[i] + 0.3 * (u[i + 1] - 2 * u[i] + u[i - 1]) - 0.1 * u[i] ** 3
        u, un = un, u
    return np.sum(u * u)

@reg()
@njit
def shift_assign(x):
    a = x.copy()
    a[1:] = a[:-1] * 1.5
    b = x.copy()
    b[:-1] = b[1:] ** 2
    return np.sum(a * b) + np.sum(a)

@reg()
@njit
def row_plus_next(x):
    A = x.reshape(4, 3).copy()
    for i in range(3):
        v = A[i]
        v += A[i + 1] * A[i + 1]
    return np.sum(A * A)

@reg(full=True)
@njit
def self_matmul(x):
    A = x[:9].reshape(3, 3)
    B = A @ A
    return np.sum(B * B) + np.dot(x, x) + np.sum(np.outer(x[:3], x[:3]))

@reg()
@njit
def power_iteration(x):
    A = x[:9].reshape(3, 3).copy()
    A = A @ A.T + np.eye(3)
    v = np.ones(3)
    for _ in range(30):
        v = A @ v
        v /= np.linalg.norm(v)
    return v @ (A @ v)

@reg()
@njit
def submatrix_gemv(x):
    A = x.reshape(3, 4)
    return np.sum((A[1:, 1:] @ x[1:4]) ** 2) + np.sum(A[:, ::2] @ x[:2]) + np.sum(A.T[::2] @ x[5:8])

@reg()
@njit
def gemm_views(x):
    A = x.reshape(3, 4)
    B = x[::-1].copy().reshape(4, 3)
    return np.sum(A.T @ B.T) + np.sum(A[::2] @ B) + np.sum(A[:, 1:] @ B[1:, :])

@njit
def _lu_solve(A, b):
    n = A.shape[0]
    A = A.copy(); b = b.copy()
    for k in range(n):
        p = k + np.argmax(np.abs(A[k:, k]))
        if p != k:
            tmp = A[k].copy(); A[k] = A[p]; A[p] = tmp
            t = b[k]; b[k] = b[p]; b[p] = t
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            A[i, k:] -= f * A[k, k:]
            b[i] -= f * b[k]
    z = np.zeros(n)
    for i in range(n - 1, -1, -1):
        z[i] = (b[i] - np.dot(A[i, i + 1:], z[i + 1:])) / A[i, i]
    return z

@reg(full=True)
@njit
def lu_pivot(x):
    A = x[:9].reshape(3, 3)
    z = _lu_solve(A, x[9:12])
    return np.sum(z * np.array([1.0, -2.0, 0.5]))

@reg()
@njit
def fancy_row_swap(x):
    A = x.reshape(4, 3).copy()
    A[np.array([0, 2])] = A[np.array([2, 0])]
    return np.sum(A * np.arange(12.0).reshape(4, 3)) + np.sum(A[:, 0] ** 2)

@reg()
@njit
def cholesky_by_hand(x):
    B = x[:9].reshape(3, 3)
    S = B @ B.T + 3.0 * np.eye(3)
    L = np.zeros((3, 3))
    for j in range(3):
        s = S[j, j] - np.dot(L[j, :j], L[j, :j])
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, 3):
            L[i, j] = (S[i, j] - np.dot(L[i, :j], L[j, :j])) / L[j, j]
    return np.sum(L) + np.log(np.prod(np.diag(L)))

@reg()
@njit
def gram_schmidt(x):
    A = x.reshape(4, 3).copy()
    Q = np.zeros_like(A)
    for j in range(3):
        v = A[:, j].copy()
        for k in range(j):
            v -= np.dot(Q[:, k], A[:, j]) * Q[:, k]
        Q[:, j] = v / np.linalg.norm(v)
    return np.sum(Q[:, 2] * np.array([1.0, 2.0, 3.0, 4.0])) + Q[0, 1]

@reg()
@njit
def kmeans_assign(x):
    P = x.reshape(6, 2)
    C = np.array([[0.0, 0.0], [1.0, 0.5]])
    C = C + 0.1 * P[:2]
    tot = 0.0
    for i in range(6):
        d = np.sum((C - P[i]) ** 2, axis=1)
        k = np.argmin(d)
        tot += d[k]
    return tot

@reg()
@njit
def softmax_xent(x):
    W = x[:8].reshape(4, 2)
    X = np.array([[1.0, 0.5, -0.3, 2.0], [0.2, -1.0, 0.7, 0.1], [1.5, 0.3, 0.3, -0.4]])
    y = np.array([0, 1, 1])
    Z = X @ W + x[8:10]
    Z = Z - Z.max() if False else Z
    loss = 0.0
    for i in range(3):
        z = Z[i]
        m = z.max()
        lse = m + np.log(np.sum(np.exp(z - m)))
        loss += lse - z[y[i]]
    return loss / 3 + 0.01 * np.sum(W ** 2)

@reg(full=True)
@njit
def mlp_tanh(x):
    W1 = x[:6].reshape(3, 2); b1 = x[6:9]; w2 = x[9:12]
    X = np.array([[0.5, -1.0], [1.0, 2.0], [-0.3, 0.4], [0.0, 1.0]])
    H = np.tanh(X @ W1.T + b1)
    out = H @ w2
    return np.mean((out - np.array([1.0, 0.0, -1.0, 0.5])) ** 2)

@reg()
@njit
def conv1d_valid(x):
    k = x[:3]
    s = x[3:]
    n = s.size - k.size + 1
    y = np.empty(n)
    for i in range(n):
        y[i] = np.dot(s[i:i + k.size], k[::-1])
    return np.sum(np.maximum(y, 0.0) ** 2)

@reg()
@njit
def ode_pop_while(x):
    # predator-prey explicit euler, stop when t >= T, event on prey threshold
    a, b = 1.0 + 0.1 * x[0], 0.5 + 0.1 * x[1]
    u, v = 1.0 + x[2] * 0.1, 0.5 + 0.1 * x[3]
    t = 0.0; dt = 0.01
    while t < 2.0:
        du = a * u - b * u * v
        dv = -v + 0.3 * u * v
        u += dt * du; v += dt * dv
        t += dt
        if u > 100.0:
            break
    return u + v

@reg()
@njit
def bilinear_interp(x):
    G = x.reshape(3, 4)
    pts = np.array([[0.3, 1.2], [1.7, 2.9], [0.9, 0.1]])
    s = 0.0
    for p in range(3):
        px, py = pts[p, 0], pts[p, 1]
        i = int(px); j = int(py)
        fx = px - i; fy = py - j
        s += ((1 - fx) * (1 - fy) * G[i, j] + fx * (1 - fy) * G[i + 1, j]
              + (1 - fx) * fy * G[i, j + 1] + fx * fy * G[i + 1, j + 1]) ** 2
    return s

if __name__ == "__main__":
    main()
