from harness import *
from numba import njit

@reg(full=True)
@njit
def np_append_loop(x):
    traj = np.empty(0)
    y = x[0]; t = 0.0
    while t < 1.0:
        y = y + 0.1 * (x[1] - y * y)
        traj = np.append(traj, y)
        t += 0.1
    return np.sum(traj ** 2) + traj[-1]

@reg(full=True)
@njit
def newton_system(x):
    a = x[:2] * 0.2
    z = np.array([1.0, 1.0])
    F = np.array([z[0] ** 2 + z[1] - 2.0 - a[0], z[0] - z[1] ** 3 - a[1]])
    it = 0
    while np.sqrt(F[0] ** 2 + F[1] ** 2) > 1e-13 and it < 50:
        J = np.array([[2 * z[0], 1.0], [1.0, -3 * z[1] ** 2]])
        z = z - np.linalg.solve(J, F)
        F = np.array([z[0] ** 2 + z[1] - 2.0 - a[0], z[0] - z[1] ** 3 - a[1]])
        it += 1
    return z[0] * 3 + z[1]

@reg()
@njit
def views_of_views_write(x):
    A = x.reshape(3, 4).copy()
    B = A[1:, :]
    C = B[:, ::2]
    C[...] = C * C
    A[1:3][0] *= 2.0
    return np.sum(A * np.arange(12.0).reshape(3, 4))

@reg()
@njit
def fancy_assign_repeat(x):
    y = np.zeros(12)
    idx = np.array([1, 4, 4, 9])
    y[idx] = x[:4] * x[4:8]
    m = x > 0.5
    y[m] = x[m] ** 2
    return np.sum(y * (1 + np.arange(12.0))) + np.sum(np.take(x, idx) ** 2)

@reg()
@njit
def sort_desc_view(x):
    s = np.sort(x)[::-1]
    return np.sum(s[:3] * np.array([3.0, 2.0, 1.0]))

@reg(full=True)
@njit
def allclose_loop(x):
    z = x.copy()
    for it in range(100):
        zn = 0.5 * (z + np.cos(z) * 0.3)
        if np.allclose(zn, z, 1e-15, 1e-15):
            z = zn
            break
        z = zn
    return np.sum(z * x)

@reg()
@njit
def abs_min_max_arrays(x):
    return np.max(np.abs(x)) + np.min(np.abs(x - 0.2)) + np.sum(np.maximum(x[:6], x[6:])) + np.sum(np.minimum(x, -x * 0.5))

@reg()
@njit
def integer_power_negative(x):
    s = 0.0
    for i in range(x.size):
        s += (x[i] + 2.0) ** -3 + (x[i] + 2.0) ** -1 + x[i] ** 0
    return s

@reg()
@njit
def div_mod_floats(x):
    s = 0.0
    for v in x:
        q = (v * 5.0) // 1.3
        r = (v * 5.0) % 1.3
        s += q * v + r * r + divmod(v * 3.0, 0.7)[1]
    return s

@reg()
@njit
def sign_flip_accum(x):
    s = 0.0; sign = 1.0
    for v in x:
        s += sign * v * v
        sign = -sign if v > 0 else sign
    return s

@reg()
@njit
def where_scalar_branches(x):
    y = np.where(x > 0, np.sqrt(np.abs(x) + 1e-3), -x ** 2)
    z = np.where(x < 0.5, 1.0, x)
    return np.sum(y * z)

@reg()
@njit
def accumulate_matrix(x):
    C = np.zeros((3, 3))
    for k in range(4):
        v = x[3 * k:3 * k + 3]
        C += np.outer(v, v)
    return np.linalg.det(C + np.eye(3)) + np.trace(C)

@reg()
@njit
def shifted_windows(x):
    n = x.size
    w = 3
    out = np.empty(n - w + 1)
    for i in range(n - w + 1):
        win = x[i:i + w]
        out[i] = win.max() - win.min() + win.mean()
    return np.sum(out ** 2)

@reg()
@njit
def ewma(x):
    alpha = 0.3
    m = x[0]
    v = 0.0
    for i in range(1, x.size):
        d = x[i] - m
        m += alpha * d
        v = (1 - alpha) * (v + alpha * d * d)
    return m + math.sqrt(v)

@reg()
@njit
def black_scholes_vec(x):
    S = 100.0 * (1 + 0.1 * x[:6]); K = 100.0; T = 1.0; r = 0.01
    sig = 0.2 + 0.05 * np.abs(x[6:])
    d1 = (np.log(S / K) + (r + 0.5 * sig ** 2) * T) / (sig * np.sqrt(T))
    d2 = d1 - sig * np.sqrt(T)
    out = 0.0
    for i in range(6):
        N1 = 0.5 * (1 + math.erf(d1[i] / math.sqrt(2)))
        N2 = 0.5 * (1 + math.erf(d2[i] / math.sqrt(2)))
        out += S[i] * N1 - K * math.exp(-r * T) * N2
    return out

if __name__ == "__main__":
    main()
