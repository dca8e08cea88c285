"""Checking a generated JAX function (gen_jax.py) the way zymase's JAX users reach it.

At each of two points, with every argument differentiated:

* ``zymase.jax.value_and_grad`` (reverse) against ``jax.grad`` of the same function
  (tight: both are exact derivatives of one program); where JAX cannot differentiate it
  in reverse (``lax.while_loop``), against central finite differences of the function in
  float64 (two step sizes, as the other checkers; a disagreement at only one of the two
  points is taken as a kink: data-dependent trip counts, branches, max/min);
* ``zymase.jax.jvp`` (forward) along a random direction against ``jax.jvp`` (which
  handles while loops), and against the reverse gradient (``<grad, v>``): reverse and
  forward must always agree; where zymase and JAX disagree, finite differences decide
  (a JAX derivative they contradict is noted in a right outcome's detail, not counted
  against zymase);
* the primal value ``value_and_grad`` returns, ``zymase.jax.jit(f)(*args)``, against
  ``jax.jit(f)`` (the primal must not change), and ``jax.grad(zymase.jax.jit(f))``
  against zymase's reverse gradient.

Outcomes as for C and njit (check_c.Outcome): right, refused (a ``ZymaseError``),
wrong, crashed (any other exception), invalid (the primal itself is not finite: a
generator defect). Run as ``python -m tests.fuzz.check_jax SEED... [--features ...]``
it checks each seed in this process and prints one JSON line per seed (the campaign's
worker process).
"""

from __future__ import annotations

import json
import os
import sys
import types

# small programs: XLA's compile time dominates, its code quality does not matter here
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")

import numpy as np  # noqa: E402

from .check_c import FD_STEPS, Outcome  # noqa: E402

LEVEL = "jax"
# zymase against JAX (same program, both exact): relative to max(1, |largest entry|);
# float32 allows for sums taken in another order
TIGHT = {"float64": 1e-9, "float32": 2e-4}
# reverse against finite differences of the float64 program (truncation; float32
# results also carry their own rounding)
FD_RTOL = {"float64": 2e-5, "float32": 2e-3}
DIRECTIONS = 1  # per point (each point draws its own)
# A disagreement is checked again with every program compiled at this XLA optimization
# level, whatever XLA_FLAGS says (above; tests/jax/conftest.py, collected in the same
# pytest process, says 0 too), and only a disagreement that remains counts: at level
# 0, XLA's CPU backend computes a wrong jax.jvp of seed 300323's float32 scan (the last
# scanned element's tangent; the float64 program, finite differences and level 1 agree
# with zymase's reverse), and zymase's forward program along with it. Checking every
# program at level 1 costs about 25% more CPU; only disagreements pay it here.
CONFIRM_XLA_OPTIONS = {"xla_backend_optimization_level": 1}


def load_module(text: str, name: str = "fuzz_jax_prog") -> types.ModuleType:
    mod = types.ModuleType(name)
    exec(compile(text, f"<{name}>", "exec"), mod.__dict__)
    return mod


def _flat(arrays) -> np.ndarray:
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])


def _close(got, want, rtol: float) -> tuple[bool, int, float, float]:
    """Whether ``got`` matches ``want`` within ``rtol * max(1, max|want|)``; the worst entry."""
    got, want = np.atleast_1d(np.asarray(got, np.float64)), np.atleast_1d(np.asarray(want, np.float64))
    if got.shape != want.shape:
        return False, -1, float("nan"), float("nan")
    if not np.all(np.isfinite(got)):
        i = int(np.argmin(np.isfinite(got)))
        return False, i, float(got[i]), float(want[i])
    err = np.abs(got - want)
    i = int(np.argmax(err)) if err.size else 0
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    ok = bool(np.all(err <= rtol * scale)) if err.size else True
    return ok, i, float(got[i]) if got.size else 0.0, float(want[i]) if want.size else 0.0


def _fd_gradient(f64, args64, primal: float):
    """Central differences of the float64 program, per entry, with both step sizes."""
    flat = _flat(args64)
    shapes = [a.shape for a in args64]

    def unflat(v):
        out, k = [], 0
        for s in shapes:
            n = int(np.prod(s))
            out.append(v[k:k + n].reshape(s))
            k += n
        return out

    fds = []
    for step in FD_STEPS:
        g = np.empty_like(flat)
        for j in range(flat.size):
            h = step * max(1.0, abs(flat[j]))
            up, down = flat.copy(), flat.copy()
            up[j] += h
            down[j] -= h
            g[j] = (float(f64(*unflat(up))) - float(f64(*unflat(down)))) / (up[j] - down[j])
        fds.append(g)
    return fds


def _fd_directional(f, args, v) -> list[float]:
    """Central differences of the float64 program along ``v``, with both step sizes."""
    a64 = [np.asarray(a, np.float64) for a in args]
    v64 = [np.asarray(b, np.float64) for b in v]
    out = []
    for h in FD_STEPS:
        up = float(f(*[a + h * b for a, b in zip(a64, v64)]))
        down = float(f(*[a - h * b for a, b in zip(a64, v64)]))
        out.append((up - down) / (2 * h))
    return out


def _fd_ok(g: np.ndarray, fds, primal: float, rtol: float) -> int | None:
    """The first entry no step size accepts (None: all accepted)."""
    for i in range(g.size):
        ok = False
        for h, fd in zip(FD_STEPS, fds):
            tol = rtol * max(1.0, abs(g[i])) + 4e-16 * max(1.0, abs(primal)) / h
            if np.isfinite(fd[i]) and abs(g[i] - fd[i]) <= tol:
                ok = True
        if not ok:
            return i
    return None


class _Point:
    """Everything computed at one point, for the comparison and the failure file."""

    def __init__(self):
        self.record: dict = {}
        self.problems: list[str] = []  # disagreements that are never kinks
        self.fd_problem: str | None = None  # a disagreement with finite differences
        self.jax_wrong: list[str] = []  # JAX's derivative disagreeing with zymase and the differences


class _Callables:
    """The functions checked and their oracles, each jitted once per program (XLA's
    compile time dominates a check; the two points share the compiled code)."""

    def __init__(self, f, nargs: int, jax, zj, xla_options: dict | None = None):
        argnums = tuple(range(nargs))
        self.f = jax.jit(f, compiler_options=xla_options)
        self.value_and_grad = zj.value_and_grad(f, argnums=argnums)
        self.jvp = lambda args, v: zj.jvp(f, args, v)
        if xla_options is not None:  # zymase's calls too (eager calls compile with XLA_FLAGS)
            self.value_and_grad = jax.jit(self.value_and_grad, compiler_options=xla_options)
            self.jvp = jax.jit(self.jvp, compiler_options=xla_options)
        self.jax_grad = jax.jit(jax.grad(f, argnums=argnums), compiler_options=xla_options)
        self.jax_jvp = jax.jit(lambda args, v: jax.jvp(f, args, v), compiler_options=xla_options)
        # zymase.jax.jit(f)'s primal and jax.grad of it, in one XLA program
        self.zjit_value_and_grad = jax.jit(jax.value_and_grad(zj.jit(f), argnums=argnums),
                                           compiler_options=xla_options)


def _check_point(mod, fns: _Callables, jax, p: int, dtype: str) -> _Point:
    args = tuple(jax.numpy.asarray(a) for a in mod.make_args(p))
    pt = _Point()
    tight = TIGHT[dtype]

    primal = float(fns.f(*args))
    value, grads = fns.value_and_grad(*args)
    g = _flat(grads)
    pt.record.update(primal=primal, zymase_value=float(value), rev=g.tolist())
    ok, *_ = _close(value, primal, tight)
    if not ok:
        pt.problems.append(f"point {p}: zymase.jax.value_and_grad value {float(value)!r} != f {primal!r}")

    # forward along random directions, against reverse and against jax.jvp
    rng = np.random.default_rng(1000 + p)
    for d in range(DIRECTIONS):
        v = tuple(jax.numpy.asarray(rng.uniform(-1.0, 1.0, a.shape).astype(dtype)) for a in args)
        tan = float(fns.jvp(args, v)[1])
        dot = float(np.dot(g, _flat(v)))
        jtan = float(fns.jax_jvp(args, v)[1])
        pt.record.setdefault("fwd", []).append(tan)
        pt.record.setdefault("jax_jvp", []).append(jtan)
        pt.record.setdefault("rev_dot_v", []).append(dot)
        scale = max(1.0, float(np.sum(np.abs(g) * np.abs(_flat(v)))))
        if not abs(tan - dot) <= tight * scale * 10:
            pt.problems.append(f"point {p} direction {d}: reverse <grad, v> {dot!r} != forward {tan!r}")
        elif not abs(tan - jtan) <= tight * max(1.0, abs(jtan), scale):
            problem = f"point {p} direction {d}: forward {tan!r} != jax.jvp {jtan!r}"
            fd = _fd_directional(fns.f, args, v)
            if _fd_ok(np.array([tan]), [np.array([x]) for x in fd], primal, FD_RTOL[dtype]) is None:
                # JAX's own derivative is the odd one out: zymase agrees with the differences
                pt.jax_wrong.append(f"{problem}; finite differences {fd} agree with zymase")
            else:
                pt.problems.append(problem)

    # the wrapper JAX transforms: its primal, and jax.grad of it
    jvalue, jgrads = fns.zjit_value_and_grad(*args)
    jvalue, jg = float(jvalue), _flat(jgrads)
    ok, *_ = _close(jvalue, primal, tight)
    if not ok:
        pt.problems.append(f"point {p}: zymase.jax.jit(f) {jvalue!r} != f {primal!r}")
    ok, i, a, b = _close(jg, g, tight)
    if not ok:
        pt.problems.append(f"point {p} d/dx{i}: jax.grad(zymase.jax.jit(f)) {a!r} != zymase.jax.grad {b!r}")

    # reverse against JAX's own gradient, or finite differences where JAX has none
    try:
        want = _flat(fns.jax_grad(*args))
    except Exception as exc:  # JAX refuses reverse mode of lax.while_loop
        pt.record["jax_grad"] = f"{type(exc).__name__}: {str(exc)[:120]}"
        want = None
    if want is not None:
        pt.record["jax_grad"] = want.tolist()
        ok, i, a, b = _close(g, want, tight)
        if not ok:
            problem = f"point {p} d/dx{i}: zymase.jax.grad {a!r} != jax.grad {b!r}"
            args64 = tuple(np.asarray(x, np.float64) for x in args)
            fds = _fd_gradient(fns.f, args64, primal)
            if _fd_ok(g, fds, primal, FD_RTOL[dtype]) is None and _fd_ok(want, fds, primal, FD_RTOL[dtype]) is not None:
                pt.jax_wrong.append(f"{problem}; finite differences agree with zymase")
            else:
                pt.problems.append(problem)
    else:
        args64 = tuple(np.asarray(a, np.float64) for a in args)
        fds = _fd_gradient(fns.f, args64, float(fns.f(*args64)))
        pt.record["fd"] = [fd.tolist() for fd in fds]
        i = _fd_ok(g, fds, primal, FD_RTOL[dtype])
        if i is not None:
            pt.fd_problem = (f"point {p} d/dx{i}: zymase.jax.grad {g[i]!r} vs finite differences "
                             f"{[float(fd[i]) for fd in fds]}")
    return pt


def _check_points(mod, jax, zj, dtype: str, xla_options: dict | None) -> dict[int, _Point]:
    fns = _Callables(mod.f, len(mod.make_args(0)), jax, zj, xla_options)
    return {p: _check_point(mod, fns, jax, p, dtype) for p in (0, 1)}


def _disagreement(points: dict[int, _Point]) -> str:
    """The first comparison that failed at any point (JAX's own derivative included), or ""."""
    return next((d for pt in points.values() for d in (*pt.problems, pt.fd_problem, *pt.jax_wrong) if d), "")


def check_jax_source(text: str) -> Outcome:
    import jax

    jax.config.update("jax_enable_x64", True)
    import zymase.jax as zj
    from zymase.errors import ZymaseError

    try:
        mod = load_module(text)
        dtype = np.dtype(mod.DTYPE).name
        primal = jax.jit(mod.f)
        for p in (0, 1):
            v = float(primal(*mod.make_args(p)))
            if not np.isfinite(v) or abs(v) > 1e8:
                return Outcome("invalid", LEVEL, f"primal {v}")
    except Exception as exc:  # the generated primal does not trace or run: a generator defect
        return Outcome("invalid", LEVEL, f"primal raised {type(exc).__name__}: {str(exc)[:300]}")
    try:
        points = _check_points(mod, jax, zj, dtype, None)
        unconfirmed = _disagreement(points)
        if unconfirmed:
            points = _check_points(mod, jax, zj, dtype, CONFIRM_XLA_OPTIONS)
    except ZymaseError as err:
        return Outcome("refused", LEVEL, err.format())
    except Exception as exc:
        return Outcome("crashed", LEVEL, f"internal error: raised {type(exc).__name__}: {str(exc)[:300]}")
    output = json.dumps({str(p): pt.record for p, pt in points.items()}, indent=1)
    for pt in points.values():
        if pt.problems:
            return Outcome("wrong", LEVEL, pt.problems[0], output)
    fd_bad = [pt.fd_problem for pt in points.values() if pt.fd_problem]
    if len(fd_bad) == len(points):
        return Outcome("wrong", LEVEL, "; ".join(fd_bad), output)
    # right; a JAX derivative that finite differences contradict is noted (not a zymase defect)
    notes = [f"JAX differs, zymase right: {n}" for pt in points.values() for n in pt.jax_wrong]
    if unconfirmed and not _disagreement(points):
        notes.append(f"XLA at XLA_FLAGS' optimization level only: {unconfirmed}")
    return Outcome("right", LEVEL, notes[0] if notes else "", output)


def main(argv: list[str]) -> int:
    from .check_njit import run_seeds
    from .gen_jax import generate_jax

    return run_seeds(argv, generate_jax, check_jax_source)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
