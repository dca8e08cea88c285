from harness import *
from numba import njit
import numba

# ---------- integrators and solvers ----------
@njit
def _rhs(t, y, k):
    d = np.empty_like(y)
    d[0] = y[1]
    d[1] = -k * y[0] - 0.1 * y[1] + 0.05 * math.sin(t)
    return d

@reg(full=True)
@njit
def rk4_while(x):
    y = x[:2].copy()
    k = 1.0 + x[2] * x[2]
    t = 0.0; dt = 0.05; tend = 1.0
    while t < tend - 1e-12:
        k1 = _rhs(t, y, k)
        k2 = _rhs(t + dt / 2, y + dt / 2 * k1, k)
        k3 = _rhs(t + dt / 2, y + dt / 2 * k2, k)
        k4 = _rhs(t + dt, y + dt * k3, k)
        y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += dt
    return y[0] * y[0] + y[1]

@reg()
@njit
def rk4_adaptive_dt(x):
    # step size depends on state (piecewise-constant -> derivative of path)
    y = x[0]; t = 0.0
    while t < 1.0:
        dt = min(0.1, 1.0 - t)
        k1 = -y * y + x[1]
        k2 = -(y + 0.5 * dt * k1) ** 2 + x[1]
        k3 = -(y + 0.5 * dt * k2) ** 2 + x[1]
        k4 = -(y + dt * k3) ** 2 + x[1]
        y += dt * (k1 + 2 * k2 + 2 * k3 + k4) / 6
        t += dt
    return y

@njit
def _f_newton(z, a, b):
    return z * z * z + a * z - b

@reg(full=True)
@njit
def newton_while(x):
    a = 1.0 + x[0] * x[0]; b = x[1] + 2.0
    z = 1.0
    fz = _f_newton(z, a, b)
    it = 0
    while abs(fz) > 1e-13:
        z = z - fz / (3 * z * z + a)
        fz = _f_newton(z, a, b)
        it += 1
        if it > 50:
            break
    return z * x[2]

@reg()
@njit
def bisection(x):
    c = 2.0 + x[0]
    lo = 0.0; hi = 3.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid * mid - c > 0:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-14:
            break
    return 0.5 * (lo + hi) + x[1] * 0.0

@reg()
@njit
def fixed_point(x):
    # z = cos(a z) + b
    a = 0.5 + 0.1 * x[0]; b = 0.2 * x[1]
    z = 0.0
    for i in range(500):
        zn = math.cos(a * z) + b
        if abs(zn - z) < 1e-15:
            z = zn
            break
        z = zn
    return z

@reg(full=True)
@njit
def implicit_euler(x):
    A = np.array([[-2.0, 1.0, 0.0], [1.0, -2.0, 1.0], [0.0, 1.0, -2.0]]) * (1.0 + x[3] ** 2)
    y = x[:3].copy()
    h = 0.1
    M = np.eye(3) - h * A
    for _ in range(5):
        y = np.linalg.solve(M, y)
    return np.sum(y * y) + y[1]

@njit
def _thomas(a, b, c, d):
    n = d.shape[0]
    cp = np.empty(n); dp = np.empty(n)
    cp[0] = c[0] / b[0]; dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m if i < n - 1 else 0.0
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    out = np.empty(n)
    out[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        out[i] = dp[i] - cp[i] * out[i + 1]
    return out

@reg(full=True)
@njit
def thomas(x):
    n = 6
    a = np.full(n, -1.0); c = np.full(n, -1.0)
    b = 4.0 + x[:n] * x[:n]
    d = x[n:2 * n]
    s = _thomas(a, b, c, d)
    return np.dot(s, s) + s[0]

@reg(full=True)
@njit
def horner(x):
    c = x[:5]
    s = 0.0
    for t in x[5:]:
        p = c[-1]
        for k in range(c.size - 2, -1, -1):
            p = p * t + c[k]
        s += p * p
    return s

@reg()
@njit
def horner_reversed_view(x):
    coef = x[:6][::-1]
    t = x[7]
    p = 0.0
    for a in coef:
        p = p * t + a
    return p

@reg()
@njit
def secant(x):
    a = 2.0 + x[0] ** 2
    z0 = 1.0; z1 = 2.0
    f0 = z0 * math.exp(z0) - a; f1 = z1 * math.exp(z1) - a
    while abs(f1) > 1e-12:
        z2 = z1 - f1 * (z1 - z0) / (f1 - f0)
        z0, f0 = z1, f1
        z1 = z2
        f1 = z1 * math.exp(z1) - a
    return z1

@reg()
@njit
def euler_heat(x):
    u = x.copy()
    for step in range(20):
        un = u.copy()
        un[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
        u = un
    return np.sum(u ** 2)

@reg()
@njit
def leapfrog(x):
    q = x[:3].copy(); p = x[3:6].copy()
    dt = 0.05
    for _ in range(30):
        p -= 0.5 * dt * np.sin(q)
        q += dt * p
        p -= 0.5 * dt * np.sin(q)
    return np.sum(q) + 0.5 * np.sum(p * p)

@reg()
@njit
def gauss_seidel(x):
    n = 4
    A = np.eye(n) * 5.0 + 0.3 * np.outer(x[:n], x[:n])
    b = x[n:2 * n]
    z = np.zeros(n)
    for it in range(50):
        for i in range(n):
            s = b[i]
            for j in range(n):
                if j != i:
                    s -= A[i, j] * z[j]
            z[i] = s / A[i, i]
    return z @ z

@reg()
@njit
def trapz_sim(x):
    t = np.linspace(0.0, 1.0, 12)
    y = np.exp(-x * t) * x
    return np.trapz(y, t) if False else np.sum((y[1:] + y[:-1]) * np.diff(t)) / 2

if __name__ == "__main__":
    main()
