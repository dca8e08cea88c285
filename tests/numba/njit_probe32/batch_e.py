"""multi-argument, strided/F-ordered inputs, mutation of inputs, array outputs, generators, try."""
import sys, math, cmath
import numpy as np, zymase
from numba import njit
from zymase.errors import ZymaseError
from harness import err

def fdg(f, args, k, h=1e-6):
    x = args[k]
    if np.isscalar(x) or np.ndim(x) == 0:
        a1 = list(args); a2 = list(args)
        a1[k] = x + h; a2[k] = x - h
        return (f(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in a1]) -
                f(*[np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in a2])) / (2 * h)
    g = np.zeros(x.shape)
    for idx in np.ndindex(x.shape):
        a1 = [np.array(a, copy=True, order="K") if isinstance(a, np.ndarray) else a for a in args]
        a2 = [np.array(a, copy=True, order="K") if isinstance(a, np.ndarray) else a for a in args]
        # keep same layout/strides as original for argument k
        p = x.copy(order="K") if x.flags.c_contiguous or x.flags.f_contiguous else None
        def mk(delta):
            base = np.array(x.base if x.base is not None else x, copy=True)
            if x.base is not None:
                off = (x.__array_interface__['data'][0] - x.base.__array_interface__['data'][0])
                v = np.lib.stride_tricks.as_strided(base.reshape(-1)[off // 8:], x.shape, x.strides)
            else:
                v = base
            v[idx] += delta
            return v
        a1[k] = mk(h); a2[k] = mk(-h)
        g[idx] = (f(*a1) - f(*a2)) / (2 * h)
    return g

def copyargs(args):
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            if a.base is not None and not (a.flags.c_contiguous):
                base = np.array(a.base, copy=True)
                off = (a.__array_interface__['data'][0] - a.base.__array_interface__['data'][0])
                out.append(np.lib.stride_tricks.as_strided(base.reshape(-1)[off // a.itemsize:], a.shape, a.strides))
            else:
                out.append(np.array(a, copy=True, order="K"))
        else:
            out.append(a)
    return out

CASES = []
def case(f, args, argnums=0, tol=1e-5):
    CASES.append((f, args, argnums, tol)); return f

rng = np.random.default_rng(0)
X = 0.0123 + np.array([0.3, -0.7, 0.45, 1.2, -0.1, 0.8, 0.05, 0.6, -0.35, 0.9, 0.15, 0.52])

@njit
def two_args(x, a, n):
    s = 0.0
    for i in range(n):
        s += math.exp(-a * x[i]) * x[i]
    return s * a
case(two_args, (X, 0.7, 10), argnums=(0, 1))

@njit
def mat_arg(A, v):
    return np.sum((A @ v) ** 2) + np.sum(A[:3, 0] * v)
M = rng.standard_normal((4, 3))
case(mat_arg, (M, X[:3]), argnums=(0, 1))
case(mat_arg, (np.asfortranarray(M), X[:3]), argnums=(0, 1))
case(mat_arg, (rng.standard_normal((3, 4)).T, X[:6:2]), argnums=(0, 1))

@njit
def strided_in(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** 3 * (i + 1)
    return s
case(strided_in, (X[::3],))
case(strided_in, (X[::-2],))

@njit
def mutates_input(x):
    x *= 2.0
    x[0] = x[1] * x[2]
    x.sort()
    return np.sum(x[:4] * x[-4:]) + x[5] ** 2
case(mutates_input, (X,))

@njit
def out_arg(x, out):
    for i in range(out.size):
        out[i] = x[i] * x[i + 1]
    return np.sum(out * x[:out.size])
case(out_arg, (X, np.zeros(6)))

@njit
def float32_arg(x):
    return np.sum(x * x * np.float32(0.5)) + np.float32(2.0) * x[0]
case(float32_arg, (X.astype(np.float32),), tol=3e-2)

@njit
def _gen(v):
    for a in v:
        yield a * a

@njit
def generator_sum(x):
    s = 0.0
    for y in _gen(x):
        s += y * 0.5 + math.sin(y)
    return s
case(generator_sum, (X,))

@njit
def try_except(x):
    s = 0.0
    for i in range(x.size):
        try:
            if x[i] < -0.5:
                raise ValueError
            s += x[i] ** 2
        except Exception:
            s -= x[i]
    return s
case(try_except, (X,))

@njit
def complex_views(x):
    z = np.empty(6, np.complex128)
    z.real[:] = x[:6]
    z.imag[:] = x[6:]
    w = z * z
    return np.sum(np.abs(w)) + np.sum(w.real * x[:6])
case(complex_views, (X,))

@njit
def cmath_funcs(x):
    z = complex(x[0], x[1])
    w = cmath.exp(z) * cmath.sqrt(z + 2.0) + cmath.log(z + 3.0)
    return w.real * w.imag + abs(cmath.sin(z))
case(cmath_funcs, (X,))

@njit
def ndenumerate_(x):
    A = x.reshape(3, 4)
    s = 0.0
    for (i, j), v in np.ndenumerate(A):
        s += v * v * (i + 2 * j)
    return s
case(ndenumerate_, (X,))

@njit
def for_else(x):
    s = 0.0
    for v in x:
        if v > 5.0:
            break
        s += v * v
    else:
        s *= x[0]
    return s
case(for_else, (X,))

@njit
def matrix_power_svd(x):
    A = x[:9].reshape(3, 3) * 0.5
    P = np.linalg.matrix_power(A, 3)
    return np.sum(P) + np.linalg.norm(A, 2) + np.sum(np.linalg.svd(A)[1])
case(matrix_power_svd, (X,))

@njit
def frexp_ldexp(x):
    s = 0.0
    for v in x:
        s += np.fmod(v * 3.0, 1.0) + math.copysign(v * v, -1.0)
    return s
case(frexp_ldexp, (X,))

@njit
def pow_both(x):
    return np.sum(np.abs(x[:6]) ** x[6:]) + np.power(2.0, x).sum()
case(pow_both, (X,))

@njit
def vdot_inner(x):
    return np.dot(x[:4], x[4:8]) ** 2 + np.dot(x[::2], x[1::2])
case(vdot_inner, (X,))

@njit
def scalar_only(a, b):
    return math.sin(a) * b ** 3 + math.sqrt(a * a + b * b)
case(scalar_only, (0.3, 1.7), argnums=(0, 1))

@njit
def arr2d_arg_loop(A):
    n, m = A.shape
    s = 0.0
    for i in range(n):
        for j in range(m):
            s += A[i, j] * A[j % n, i % m]
    return s
case(arr2d_arg_loop, (rng.standard_normal((3, 5)),))
case(arr2d_arg_loop, (rng.standard_normal((5, 3)).T,))
case(arr2d_arg_loop, (rng.standard_normal((3, 10))[:, ::2],))

@njit
def tuple_arg(t):
    a, b = t
    return np.sum(a * b) + a[0] ** 2
case(tuple_arg, ((X[:4].copy(), X[4:8].copy()),))

def run():
    names = sys.argv[1:]
    for f, args, argnums, tol in CASES:
        if names and f.__name__ not in names: continue
        tag = f.__name__ + "[" + ",".join(("F" if getattr(a, "flags", None) is not None and a.flags.f_contiguous and not a.flags.c_contiguous else "S" if getattr(a, "flags", None) is not None and not a.flags.c_contiguous else "C") if isinstance(a, np.ndarray) else type(a).__name__[0] for a in args) + "]"
        try:
            f(*copyargs(args))
            an = argnums if isinstance(argnums, tuple) else (argnums,)
            g = zymase.grad(f, argnums=argnums)(*copyargs(args))
            if not isinstance(argnums, tuple): g = (g,)
            worst = 0.0; msg = ""
            for k, gk in zip(an, g):
                if isinstance(args[k], tuple):
                    for m in range(len(args[k])):
                        def fm(v, m=m, k=k):
                            t = list(args[k]); t[m] = v
                            aa = list(copyargs(args)); aa[k] = tuple(np.array(e, copy=True) for e in t)
                            return f(*aa)
                        ref = fdg(fm, (args[k][m],), 0)
                        e = err(gk[m], ref); worst = max(worst, e)
                        if e > tol: msg += f"\n   arg{k}.{m} ad={gk[m]} fd={ref}"
                    continue
                ref = fdg(f, args, k)
                e = err(gk, ref); worst = max(worst, e)
                if e > tol: msg += f"\n   arg{k} ad={np.ravel(gk)} fd={np.ravel(ref)}"
            print(f"{tag:28s} grad:{'ok' if worst <= tol else 'WRONG'} {worst:.1e}{msg}", flush=True)
        except ZymaseError as e:
            print(f"{tag:28s} grad:REFUSED: {str(e).splitlines()[0][:220]}", flush=True)
        except Exception as e:
            print(f"{tag:28s} FAIL {type(e).__name__}: {str(e).splitlines()[0][:220] if str(e) else ''}", flush=True)

run()
