import sys, math
import numpy as np, zymase
from numba import njit
from zymase.errors import ZymaseError
from harness import err

X = 0.0123 + np.array([0.3, -0.7, 0.45, 1.2, -0.1, 0.8])

def run(name, fn):
    try:
        e, extra = fn()
        print(f"{name:34s} {'ok' if e <= 1e-5 else 'WRONG'} {e:.1e}{extra if e > 1e-5 else ''}", flush=True)
    except ZymaseError as ex:
        print(f"{name:34s} REFUSED: {str(ex).splitlines()[0][:200]}", flush=True)
    except Exception as ex:
        print(f"{name:34s} CRASH {type(ex).__name__}: {str(ex).splitlines()[0][:200] if str(ex) else ''}", flush=True)

@njit
def loss(w, b, X, y, lam):
    z = X @ w + b
    p = 1.0 / (1.0 + np.exp(-z))
    eps = 1e-12
    return -np.mean(y * np.log(p + eps) + (1 - y) * np.log(1 - p + eps)) + lam * np.dot(w, w)

rng = np.random.default_rng(3)
Xd = rng.standard_normal((8, 3)); yd = (rng.random(8) > 0.5).astype(np.float64)
w0 = np.array([0.2, -0.4, 0.1]); b0 = 0.3; lam = 0.05

def fd_scalar(f, args, k, h=1e-6):
    a = list(args)
    x = a[k]
    if isinstance(x, float):
        ap = a.copy(); am = a.copy(); ap[k] = x + h; am[k] = x - h
        return (f(*ap) - f(*am)) / (2 * h)
    g = np.zeros_like(x)
    for i in range(x.size):
        ap = a.copy(); am = a.copy()
        xp = x.copy(); xp.flat[i] += h; xm = x.copy(); xm.flat[i] -= h
        ap[k] = xp; am[k] = xm
        g.flat[i] = (f(*ap) - f(*am)) / (2 * h)
    return g

def t1():
    gw, gb, glam = zymase.grad(loss, argnums=(0, 1, 4))(w0.copy(), b0, Xd, yd, lam)
    args = (w0, b0, Xd, yd, lam)
    return max(err(gw, fd_scalar(loss, args, 0)), err(gb, fd_scalar(loss, args, 1)), err(glam, fd_scalar(loss, args, 4))), f" {gw} {gb} {glam}"
run("logreg grad argnums=(0,1,4)", t1)

def t2():
    H = zymase.hessian(loss, argnums=(0, 1))(w0.copy(), b0, Xd, yd, lam)
    gf = zymase.grad(loss, argnums=(0, 1))
    h = 1e-5
    # d/dw of (gw, gb)
    Hww = np.zeros((3, 3)); Hwb = np.zeros(3)
    for i in range(3):
        wp = w0.copy(); wp[i] += h; wm = w0.copy(); wm[i] -= h
        gp = gf(wp, b0, Xd, yd, lam); gm = gf(wm, b0, Xd, yd, lam)
        Hww[:, i] = (gp[0] - gm[0]) / (2 * h); Hwb[i] = (gp[1] - gm[1]) / (2 * h)
    gp = gf(w0.copy(), b0 + h, Xd, yd, lam); gm = gf(w0.copy(), b0 - h, Xd, yd, lam)
    Hbb = (gp[1] - gm[1]) / (2 * h)
    e = max(err(H[0][0], Hww), err(H[0][1], Hwb), err(H[1][0], Hwb), err(H[1][1], Hbb))
    return e, f"\n {H}\n {Hww} {Hwb} {Hbb}"
run("logreg hessian argnums=(0,1)", t2)

def t3():
    tw = np.array([1.0, 0.5, -0.3]); tb = 0.7
    y, ty = zymase.jvp(lambda *a: None, (), ()) if False else zymase.jvp(loss, (w0.copy(), b0, Xd, yd, lam), (tw, tb, None, None, None))
    h = 1e-6
    ref = (loss(w0 + h * tw, b0 + h * tb, Xd, yd, lam) - loss(w0 - h * tw, b0 - h * tb, Xd, yd, lam)) / (2 * h)
    return err(ty, ref), f" {ty} {ref}"
run("logreg jvp with None tangents", t3)

@njit
def writes_arg(x, out):
    for i in range(out.size):
        out[i] = math.sin(x[i]) * x[i + 1]
    out[0] += out[1]
    return np.sum(out ** 2)

def t4():
    out = np.zeros(5)
    H = zymase.hessian(writes_arg)(X.copy(), out)
    gf = zymase.grad(writes_arg)
    R = np.zeros((6, 6)); h = 1e-5
    for i in range(6):
        xp = X.copy(); xp[i] += h; xm = X.copy(); xm[i] -= h
        R[:, i] = (gf(xp, np.zeros(5)) - gf(xm, np.zeros(5))) / (2 * h)
    return err(H, R), f"\n{H}\n{R}"
run("hessian of fn writing an out arg", t4)

def t5():
    J = zymase.jacfwd(writes_arg, argnums=0)(X.copy(), np.zeros(5))
    R = fd_scalar(lambda x: writes_arg(x, np.zeros(5)), (X,), 0)
    return err(J, R), f" {J} {R}"
run("jacfwd fn writing out arg", t5)

@njit
def mat2d(A):
    return np.sum(np.tanh(A @ A.T)) + np.linalg.det(A[:2, :2]) if False else np.sum(np.tanh(A @ A.T)) + A[0, 1] * A[1, 0] ** 2

def t6():
    A = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
    H = zymase.hessian(mat2d)(A.copy())
    gf = zymase.grad(mat2d)
    R = np.zeros((2, 3, 2, 3)); h = 1e-5
    for idx in np.ndindex(2, 3):
        Ap = A.copy(); Ap[idx] += h; Am = A.copy(); Am[idx] -= h
        R[(Ellipsis,) + idx] = (gf(Ap) - gf(Am)) / (2 * h)
    return err(H, R) if H.shape == R.shape else 1.0, f" shape {H.shape}"
run("hessian 2-D arg", t6)

@njit
def scalar_f32(a, b):
    return a * a * b + np.float32(0.5) * b

def t7():
    ga, gb = zymase.grad(scalar_f32, argnums=(0, 1))(np.float32(0.7), np.float32(1.3))
    return max(abs(ga - 2 * 0.7 * 1.3), abs(gb - (0.49 + 0.5))) / 1e2, f" {ga} {gb} {type(ga)}"
run("float32 scalar args", t7)

def t8():
    v = rng.standard_normal(3)
    Hv = zymase.hvp(loss)(w0.copy(), b0, Xd, yd, lam, v)
    gf = zymase.grad(loss); h = 1e-5
    R = (gf(w0 + h * v, b0, Xd, yd, lam) - gf(w0 - h * v, b0, Xd, yd, lam)) / (2 * h)
    return err(Hv, R), f" {Hv} {R}"
run("hvp logreg", t8)

def t9():
    J = zymase.jacrev(lambda: 0) if False else zymase.jacrev(zymase.grad(loss))(w0.copy(), b0, Xd, yd, lam)
    H = zymase.hessian(loss)(w0.copy(), b0, Xd, yd, lam)
    return err(J, H), f"\n{J}\n{H}"
run("jacrev(grad) vs hessian", t9)

def t10():
    g3 = zymase.grad(zymase.grad(zymase.grad(scalar_f32)))(0.7, 1.3)
    return abs(g3 - 0.0), f" {g3}"
run("grad^3 scalar (d3/da3 = 0)", t10)

@njit
def cube_mix(a, b):
    return a ** 3 * b + math.sin(a) * b * b

def t11():
    g3 = zymase.grad(zymase.grad(zymase.grad(cube_mix)))(0.7, 1.3)
    ref = 6 * 1.3 - math.cos(0.7) * 1.3 ** 2
    return abs(g3 - ref), f" {g3} {ref}"
run("grad^3 scalar cube_mix", t11)
