"""array/tuple outputs (jacfwd, jacrev, vjp), value_and_grad, hvp, long loops, odd shapes."""
import sys, math
import numpy as np, zymase
from numba import njit
from zymase.errors import ZymaseError
from harness import err

X = 0.0123 + np.array([0.3, -0.7, 0.45, 1.2, -0.1, 0.8, 0.05, 0.6, -0.35, 0.9, 0.15, 0.52])

def fdjac(f, x, h=1e-6):
    y0 = np.asarray(f(x.copy()))
    J = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        xp = x.copy(); xp[idx] += h; xm = x.copy(); xm[idx] -= h
        J[(Ellipsis,) + idx] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * h)
    return J

def flat(t):
    if isinstance(t, tuple): return np.concatenate([flat(e) for e in t])
    return np.ravel(np.asarray(t, dtype=float))

def report(name, tag, fn):
    try:
        e, extra = fn()
        print(f"{name:24s} {tag}:{'ok' if e <= 1e-5 else 'WRONG'} {e:.1e}{extra if e > 1e-5 else ''}", flush=True)
    except ZymaseError as ex:
        print(f"{name:24s} {tag}:REFUSED: {str(ex).splitlines()[0][:220]}", flush=True)
    except Exception as ex:
        print(f"{name:24s} {tag}:CRASH {type(ex).__name__}: {str(ex).splitlines()[0][:220] if str(ex) else ''}", flush=True)

ARR = {}
def arr(f): ARR[f.__name__] = f; return f

@arr
@njit
def ret_view(x):
    return x[::2] * 1.0

@arr
@njit
def ret_input_modified(x):
    x[1:] += x[:-1] ** 2
    return x

@arr
@njit
def ret_slice_of_input(x):
    return x[3:7]

@arr
@njit
def ret_transpose(x):
    A = x.reshape(3, 4)
    return A.T

@arr
@njit
def ret_tuple(x):
    return np.sum(x * x), x[:3] * x[3:6], math.sin(x[0])

@arr
@njit
def ret_2d_outer(x):
    return np.outer(x[:3], np.cos(x[3:5]))

@arr
@njit
def ret_cumsum_sorted(x):
    return np.cumsum(np.sort(x))

@arr
@njit
def ret_ode_traj(x):
    n = 20
    out = np.empty((n, 2))
    y0, y1 = x[0], x[1]
    for i in range(n):
        y0, y1 = y0 + 0.1 * y1, y1 - 0.1 * math.sin(y0)
        out[i, 0] = y0; out[i, 1] = y1
    return out

@arr
@njit
def ret_softmax(x):
    e = np.exp(x - np.max(x))
    return e / e.sum()

@arr
@njit
def ret_float32(x):
    return (x * x).astype(np.float32)

def main():
    names = sys.argv[1:]
    rng = np.random.default_rng(2)
    for name, f in ARR.items():
        if names and name not in names: continue
        x0 = X.copy()
        f(x0.copy())
        def jf(f=f):
            J = zymase.jacfwd(f)(x0.copy())
            R = fdjac(lambda v: flat(f(v)), x0)
            Jf = np.concatenate([np.reshape(j, (-1, x0.size)) for j in J]) if isinstance(J, tuple) else np.reshape(J, (-1, x0.size))
            return err(Jf, R.reshape(-1, x0.size)), f"\n   ad={Jf}\n   fd={R}"
        def jr(f=f):
            J = zymase.jacrev(f)(x0.copy())
            R = fdjac(lambda v: flat(f(v)), x0)
            Jf = np.concatenate([np.reshape(j, (-1, x0.size)) for j in J]) if isinstance(J, tuple) else np.reshape(J, (-1, x0.size))
            return err(Jf, R.reshape(-1, x0.size)), f"\n   ad={Jf}\n   fd={R}"
        def vj(f=f):
            y, pull = zymase.vjp(f, x0.copy())
            ct = tuple(rng.standard_normal(np.shape(e)) if np.ndim(e) else float(rng.standard_normal()) for e in y) if isinstance(y, tuple) else rng.standard_normal(np.shape(y))
            (g,) = pull(ct)
            R = fdjac(lambda v: float(np.dot(flat(f(v)), flat(ct))), x0)
            return err(g, R), f"\n   ad={g}\n   fd={R}"
        def jv(f=f):
            t = rng.standard_normal(x0.size)
            y, ty = zymase.jvp(f, (x0.copy(),), (t,))
            h = 1e-6
            R = (flat(f(x0 + h * t)) - flat(f(x0 - h * t))) / (2 * h)
            return max(err(flat(ty), R), err(flat(y), flat(f(x0.copy())))), f"\n   ad={flat(ty)}\n   fd={R}"
        for tag, fn in (("jacfwd", jf), ("jacrev", jr), ("vjp", vj), ("jvp", jv)):
            report(name, tag, fn)

    # scalar-valued extras
    @njit
    def long_while(x):
        y = x.copy(); t = 0.0
        while t < 5.0:
            y = y - 0.001 * (y ** 3 - np.roll(y, 1))
            t += 0.001
        return np.sum(y * y)
    @njit
    def zero_size_safe(x):
        if x.size == 0:
            return 0.0
        return np.sum(x * x)
    @njit
    def rosen(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    for name, f in (("long_while", long_while), ("rosen", rosen), ("zero_size_safe", zero_size_safe)):
        if names and name not in names: continue
        def vg(f=f):
            v, g = zymase.value_and_grad(f)(X.copy())
            R = fdjac(f, X)
            return max(err(g, R), err(v, f(X.copy()))), f"\n   ad={g}\n   fd={R}"
        report(name, "value_and_grad", vg)
        def hv(f=f):
            vv = rng.standard_normal(X.size)
            Hv = zymase.hvp(f)(X.copy(), vv)
            gf = zymase.grad(f); h = 1e-5
            R = (gf(X + h * vv) - gf(X - h * vv)) / (2 * h)
            return err(Hv, R), f"\n   ad={Hv}\n   fd={R}"
        report(name, "hvp", hv)
    if not names or "zero_size_safe" in names:
        def zs():
            g = zymase.grad(zero_size_safe)(np.zeros(0))
            return (0.0 if g.shape == (0,) else 1.0), f" g={g}"
        report("zero_size_safe", "grad(empty)", zs)

main()
