"""Checking a generated njit module: ``zymase.grad`` against ``zymase.jvp`` (one basis
direction per input) and against central finite differences, at two points; the outcome
is classified like a C program's (check_c.Outcome, check_c.compare_outputs).

Run as ``python -m tests.fuzz.check_njit SEED... [--features ...]`` it checks each seed in
this process and prints one JSON line per seed: the campaign runs njit programs in such
worker processes, so that a crash of one program does not end the campaign.
"""

from __future__ import annotations

import json
import math
import sys
import types

import numpy as np

from .check_c import FD_STEPS, Outcome, compare_outputs

LEVEL = "njit"


def load_module(text: str, name: str = "fuzz_njit_prog") -> types.ModuleType:
    mod = types.ModuleType(name)
    exec(compile(text, f"<{name}>", "exec"), mod.__dict__)
    return mod


def _copy(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _flat(args) -> list[float]:
    out = []
    for a in args:
        out += list(a.ravel()) if isinstance(a, np.ndarray) else [float(a)]
    return out


def _unflat(args, values):
    out, k = [], 0
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(np.array(values[k:k + a.size], dtype=a.dtype).reshape(a.shape))
            k += a.size
        else:
            out.append(float(values[k]))
            k += 1
    return tuple(out)


def _point(f, grad, args, zymase) -> dict:
    primal = float(f(*_copy(args)))
    nargs = len(args)
    grads = grad(*_copy(args))
    if nargs == 1:
        grads = (grads,)
    rev = dict(enumerate(_flat(grads)))
    flat = _flat(args)
    fwd = {}
    for j in range(len(flat)):
        tangent = _unflat(args, [1.0 if i == j else 0.0 for i in range(len(flat))])
        _, d = zymase.jvp(f, _copy(args), tangent)
        fwd[j] = float(d)
    fd = {}
    for k, step in enumerate(FD_STEPS):
        fd[k] = {}
        for j in range(len(flat)):
            h = step * max(1.0, abs(flat[j]))
            up, down = list(flat), list(flat)
            up[j] += h
            down[j] -= h
            fp = float(f(*_unflat(args, up)))
            fm = float(f(*_unflat(args, down)))
            fd[k][j] = (fp - fm) / (up[j] - down[j])
    return {"primal": primal, "rev": rev, "fwd": fwd, "fd": fd}


def load_points(text: str, level: str = LEVEL, more=None):
    """(module, {p: args}) of a generated njit module at make_args' points 0 and 1 (and
    those ``more(points)`` adds), or the 'invalid' Outcome when the primal does not
    compile, run or stay finite and bounded there (a generator defect, never an engine one)."""
    try:
        mod = load_module(text)
        points = {p: mod.make_args(p) for p in (0, 1)}
        if more is not None:
            points.update(more(points))
        for args in points.values():
            v = float(mod.f(*_copy(args)))
            if not math.isfinite(v) or abs(v) > 1e8:
                return Outcome("invalid", level, f"primal {v}")
    except Exception as exc:
        return Outcome("invalid", level, f"primal raised {type(exc).__name__}: {str(exc)[:300]}")
    return mod, points


def check_njit_source(text: str) -> Outcome:
    import zymase
    from zymase.errors import ZymaseError

    loaded = load_points(text)
    if isinstance(loaded, Outcome):
        return loaded
    mod, points = loaded
    try:
        nargs = len(points[0])
        grad = zymase.grad(mod.f, argnums=tuple(range(nargs)) if nargs > 1 else 0)
        results = {p: _point(mod.f, grad, args, zymase) for p, args in points.items()}
    except ZymaseError as err:
        return Outcome("refused", LEVEL, err.format())
    except Exception as exc:
        return Outcome("crashed", LEVEL, f"internal error: raised {type(exc).__name__}: {str(exc)[:300]}")
    kind, detail = compare_outputs(results, fast=False)
    return Outcome(kind, LEVEL, detail, json.dumps({str(p): _jsonable(r) for p, r in results.items()}, indent=1))


def _jsonable(r):
    return {"primal": r["primal"], "rev": r["rev"], "fwd": r["fwd"], "fd": r["fd"]}


def run_seeds(argv: list[str], generate, check) -> int:
    """A campaign worker's main: ``SEED... [--features F1,F2]``, each generated program
    checked and its outcome printed as one JSON line (``campaign._njit_worker`` reads them)."""
    features = None
    if "--features" in argv:
        k = argv.index("--features")
        features = set(argv[k + 1].split(",")) if argv[k + 1] else set()
        argv = argv[:k] + argv[k + 2:]
    for s in argv:
        o = check(generate(int(s), features))
        print(json.dumps({"seed": int(s), "kind": o.kind, "detail": o.detail, "output": o.output}), flush=True)
    return 0


def main(argv: list[str]) -> int:
    from .gen_njit import generate_njit

    return run_seeds(argv, generate_njit, check_njit_source)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
