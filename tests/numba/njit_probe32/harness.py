"""Session 32's hand probes of njit code written as public projects write it (not collected by
pytest: run a batch as a script, optionally with function names):

    PYTHONPATH=src python tests/numba/njit_probe32/batch_a.py [NAME ...]
    ALLFULL=1 ...    (jvp, jacfwd and hessian for every function, not only the FULL ones)

batch_a: integrators and solvers; b: array idioms; c: Python idioms and prange; d: NumPy
functions and linalg; e: arguments (several, scalars, strided/F-ordered, tuples, mutated,
outputs); f: in-place and buffer-reusing algorithms; g: array and tuple results through
jacfwd/jacrev/vjp/jvp, value_and_grad, hvp; h: njit options (parallel, fastmath,
error_model, boundscheck, inline); i: lists, vectorize/guvectorize/stencil, functions as
arguments; j: np.append, systems of equations, views of views; k: argnums, hessian of
several arguments, third order. grad is checked against central differences at two points
(steps 1e-6 and 1e-5, whose disagreement is printed as fdnoise), jvp along a random
direction, hessian against differences of zymase's gradient. Expected non-ok lines:
bisection (its derivative is 0: the result is piecewise constant), float32_* (float32
differences are noise at these steps), par_min_cond (Numba's own result is the initial
value), the refusals listed in docs/architecture.md section 10 (session 32)."""
import sys, math, traceback, time
import numpy as np, numba
import zymase
from zymase.errors import ZymaseError

FUNCS = {}
FULL = set()
X0 = {}

def reg(full=False, x0=None):
    def d(f):
        FUNCS[f.__name__] = f
        if full: FULL.add(f.__name__)
        if x0 is not None: X0[f.__name__] = x0
        return f
    return d

def fd(f, x, h):
    g = np.zeros_like(x)
    for i in range(x.size):
        xp = x.copy(); xp.flat[i] += h; xm = x.copy(); xm.flat[i] -= h
        g.flat[i] = (f(xp) - f(xm)) / (2 * h)
    return g

def err(a, b):
    a = np.asarray(a, dtype=float); b = np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(1, np.abs(b)))) if a.size else 0.0

def fdbest(f, x):
    # two steps: take the closer-agreeing pair
    r1 = fd(f, x, 1e-6); r2 = fd(f, x, 1e-5)
    return r1, err(r1, r2)

def check(name, out):
    f = FUNCS[name]
    x0 = X0.get(name, DEFAULT_X0).copy()
    res = {}
    def run(tag, fn):
        try:
            res[tag] = fn()
        except ZymaseError as e:
            res[tag] = "REFUSED: " + str(e).splitlines()[0][:200]
        except Exception as e:
            res[tag] = f"CRASH {type(e).__name__}: " + str(e).splitlines()[0][:200] if str(e) else f"CRASH {type(e).__name__}"
    f(x0.copy())
    def g():
        worst = 0.0; notes = []
        for k, x in enumerate((x0, x0 + 0.0371 * np.cos(np.arange(x0.size)))):
            gz = zymase.grad(f)(x.copy())
            ref, fdnoise = fdbest(f, x)
            e = err(gz, ref)
            if e > 1e-5:
                notes.append(f"pt{k} err={e:.2e} fdnoise={fdnoise:.1e}\n      ad={np.array2string(np.asarray(gz), precision=6, max_line_width=200)}\n      fd={np.array2string(ref, precision=6, max_line_width=200)}")
            worst = max(worst, e)
        return ("ok" if worst <= 1e-5 else "WRONG") + f" {worst:.1e}" + ("".join("\n    " + n for n in notes))
    run("grad", g)
    import os
    if name in FULL or os.environ.get('ALLFULL'):
        rng = np.random.default_rng(1)
        t = rng.standard_normal(x0.size)
        def j():
            y, ty = zymase.jvp(f, (x0.copy(),), (t.copy(),))
            h = 1e-6
            ref = (f(x0 + h * t) - f(x0 - h * t)) / (2 * h)
            e = err(ty, ref) ; e0 = err(y, f(x0.copy()))
            e = max(e, e0)
            return ("ok" if e <= 1e-5 else "WRONG") + f" {e:.1e}" + ("" if e <= 1e-5 else f" ad={ty} fd={ref} y={y}")
        run("jvp", j)
        def jf():
            J = zymase.jacfwd(f)(x0.copy())
            ref, _ = fdbest(f, x0)
            e = err(np.ravel(J), np.ravel(ref))
            return ("ok" if e <= 1e-5 else "WRONG") + f" {e:.1e}" + ("" if e <= 1e-5 else f"\n      ad={np.ravel(J)}\n      fd={np.ravel(ref)}")
        run("jacfwd", jf)
        def hs():
            H = zymase.hessian(f)(x0.copy())
            gf = zymase.grad(f)
            n = x0.size; R = np.zeros((n, n)); h = 1e-5
            for i in range(n):
                xp = x0.copy(); xp[i] += h; xm = x0.copy(); xm[i] -= h
                R[:, i] = (gf(xp) - gf(xm)) / (2 * h)
            e = err(H, R)
            return ("ok" if e <= 1e-4 else "WRONG") + f" {e:.1e}" + ("" if e <= 1e-4 else f"\n      ad={np.round(H,5)}\n      fd={np.round(R,5)}")
        run("hessian", hs)
    line = f"{name:22s} " + "  ".join(f"{k}:{v}" for k, v in res.items())
    print(line, flush=True); out.append((name, res))

DEFAULT_X0 = 0.0123 + np.array([0.3, -0.7, 0.45, 1.2, -0.1, 0.8, 0.05, 0.6, -0.35, 0.9, 0.15, 0.52])

def main():
    out = []
    names = sys.argv[1:] or list(FUNCS)
    for n in names:
        t0 = time.time()
        try:
            check(n, out)
        except Exception as e:
            print(f"{n:22s} PRIMAL/HARNESS FAIL {type(e).__name__}: {e}", flush=True)
    return out
