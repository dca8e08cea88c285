"""Second-order checks of generated njit programs (``--lang njit-hessian``): the Hessian of
``f`` with respect to its array ``x`` by every path zymase has, against central
differences of ``zymase.grad`` and of the primal, and the paths against each other.

At each point (gen_njit's two, and, when ``f`` takes more than ``hessian``'s one chunk of
8 elements, two more points at 9 to 12 elements: the chunked njit Hessian loop):

- ``hessian(f)`` (forward over reverse at width n) against central differences of
  ``grad(f)`` along each basis direction (two step sizes, either may agree) and its
  diagonal against second differences of ``f``; the kink rule of check_c applies (an
  entry that disagrees at only one of the two points is a kink, accepted);
- tight (1e-8 relative): ``jacfwd(grad(f))``, ``jacrev(grad(f))`` against the Hessian;
  ``hvp(f)(x, w)``, ``jvp(grad(f))`` along ``w``, ``grad`` of an njit function returning
  ``w . grad(f)(x)`` (reverse over reverse, njit code calling a gradient) and ``grad`` of
  an njit function returning ``jvp(f)`` along ``w`` (reverse over forward, ``jvp`` in njit
  code) against ``H @ w``; ``laplacian(f)`` against the Hessian's trace (of an njit
  function calling f on a copy of x when f writes into x, which laplacian refuses);
- with a scalar argument ``a``: ``hessian(f, argnums=1)`` and ``grad(grad(f, 1), 1)``
  (reverse over reverse) against central differences of ``grad(f, argnums=1)``.

A refusal of ``hessian(f)`` itself is the outcome (refused); a refusal of another path
is noted on a right outcome. Run as ``python -m tests.fuzz.check_hessian SEED...``: the
campaign's worker, like check_njit's.
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np

from .check_c import FD_STEPS, Outcome, compare_outputs
from .check_njit import _copy, load_points

LEVEL = "njit-hessian"
# gen_njit's arrays have 5..7 elements; more than this many is the chunked Hessian loop
CHUNK = 8
# second differences of f: the steps (relative to max(1, |x_j|); either may agree, as with
# FD_STEPS) and the tolerance (truncation ~ h^2 |f''''| / 12, rounding ~ 4 eps |f| / h^2);
# gen_njit seed 7008's H[2,2] = -46.167 has second differences -46.53 at 1e-3, -46.171 at 1e-4
SECOND_DIFF_STEPS = (1e-3, 1e-4)
SECOND_DIFF_RTOL = 1e-4


def _direction(n: int) -> np.ndarray:
    return np.cos(1.0 + 0.7 * np.arange(n))


def _wrappers(f, scalar_arg: bool, n: int):
    """njit functions of f's parameters: ``w . grad(f)(x)`` (njit code calling a
    gradient: its gradient is reverse over reverse), ``jvp(f)`` along ``w`` (njit code
    calling jvp: its gradient is reverse over forward), w = _direction(n), and f of a
    copy of x (for laplacian, which refuses a function writing into its argument)."""
    import zymase
    from numba import njit

    df = zymase.grad(f, argnums=0)
    w = _direction(n)
    if scalar_arg:
        def dot_grad(x, a):
            return np.dot(w, df(x.copy(), a))

        def along(x, a):
            return zymase.jvp(f, (x.copy(), a), (w, 0.0))[1]

        def on_copy(x, a):
            return f(x.copy(), a)
    else:
        def dot_grad(x):
            return np.dot(w, df(x.copy()))

        def along(x):
            return zymase.jvp(f, (x.copy(),), (w,))[1]

        def on_copy(x):
            return f(x.copy())
    return njit(dot_grad), njit(along), njit(on_copy)


def _try(fn, notes: list, what: str):
    """fn()'s value, or None with a note when zymase refuses it (a ZymaseError)."""
    from zymase.errors import ZymaseError

    try:
        return fn()
    except ZymaseError as err:
        notes.append(f"{what} refused: {err.format()[:200]}")
        return None


def _point(mod, args, notes: list, through_njit: bool = True) -> dict:
    import zymase

    f = mod.f
    scalar_arg = len(args) == 2
    x = args[0]
    n = x.shape[0]
    rest = args[1:]
    fx = float(f(*_copy(args)))
    H = np.asarray(zymase.hessian(f, argnums=0)(*_copy(args)), dtype=float)
    if H.shape != (n, n):
        raise AssertionError(f"hessian has shape {H.shape}, expected {(n, n)}")
    grad0 = zymase.grad(f, argnums=0)
    g0 = np.asarray(grad0(*_copy(args)), dtype=float)
    # finite differences of the gradient, column j = d grad / d x_j
    fd = {}
    for k, step in enumerate(FD_STEPS):
        fd[k] = {}
        for j in range(n):
            h = step * max(1.0, abs(x[j]))
            up, down = x.copy(), x.copy()
            up[j] += h
            down[j] -= h
            width = up[j] - down[j]  # before the calls: f may write into x
            gp = np.asarray(grad0(up, *rest), dtype=float)
            gm = np.asarray(grad0(down, *rest), dtype=float)
            for i in range(n):
                fd[k][i * n + j] = float((gp[i] - gm[i]) / width)
    rev = {i * n + j: float(H[i, j]) for i in range(n) for j in range(n)}
    # the diagonal against second differences of f (a further fd "step" per entry)
    second = {}
    for j in range(n):
        second[j] = []
        for step in SECOND_DIFF_STEPS:
            h = step * max(1.0, abs(x[j]))
            up, down = x.copy(), x.copy()
            up[j] += h
            down[j] -= h
            fp, fm = float(f(up, *rest)), float(f(down, *rest))
            second[j].append(((fp - 2.0 * fx + fm) / (h * h), h))
    lanes = {}
    w = _direction(n)
    Hw = H @ w

    def tight(label, got, want):
        got, want = np.atleast_1d(np.asarray(got, dtype=float)).ravel(), np.atleast_1d(np.asarray(want)).ravel()
        if got.shape != want.shape:
            lanes[len(lanes)] = (math.nan, 0.0, f"{label}: shape {got.shape} != {want.shape}")
            return
        for i, (gv, wv) in enumerate(zip(got, want)):
            lanes[len(lanes)] = (float(gv), float(wv), f"{label}[{i}]")

    jf = _try(lambda: zymase.jacfwd(zymase.grad(f, argnums=0))(*_copy(args)), notes, "jacfwd(grad(f))")
    if jf is not None:
        tight("jacfwd(grad(f)) vs hessian", jf, H)
    jr = _try(lambda: zymase.jacrev(zymase.grad(f, argnums=0))(*_copy(args)), notes, "jacrev(grad(f))")
    if jr is not None:
        tight("jacrev(grad(f)) vs hessian", jr, H)
    hv = _try(lambda: zymase.hvp(f, argnums=0)(*_copy(args), w.copy()), notes, "hvp(f)")
    if hv is not None:
        tight("hvp(f) vs hessian @ w", hv, Hw)
    tangents = (w.copy(),) + tuple(0.0 for _ in rest)
    jv = _try(lambda: zymase.jvp(zymase.grad(f, argnums=0), _copy(args), tangents), notes, "jvp(grad(f))")
    if jv is not None:
        tight("jvp(grad(f)) gradient vs grad(f)", jv[0], g0)
        tight("jvp(grad(f)) vs hessian @ w", jv[1], Hw)
    dot_grad, along, on_copy = _wrappers(f, scalar_arg, n)
    if through_njit:
        rr = _try(lambda: zymase.grad(dot_grad, argnums=0)(*_copy(args)), notes, "grad of njit code calling grad(f)")
        if rr is not None:
            tight("grad(w . grad(f)) (reverse over reverse) vs hessian @ w", rr, Hw)
        rf = _try(lambda: zymase.grad(along, argnums=0)(*_copy(args)), notes, "grad of njit code calling jvp(f)")
        if rf is not None:
            tight("grad(jvp(f) along w) (reverse over forward) vs hessian @ w", rf, Hw)
    lap = _try(lambda: zymase.laplacian(f)(*_copy(args)), [], "laplacian(f)")
    if lap is None:  # f writes into x: the laplacian of f on a copy
        lap = _try(lambda: zymase.laplacian(on_copy)(*_copy(args)), notes, "laplacian(f(x.copy()))")
    if lap is not None:
        tight("laplacian(f) vs trace(hessian)", lap, np.trace(H))
    scalar = {}
    if scalar_arg:
        a = float(args[1])
        haa = float(np.asarray(zymase.hessian(f, argnums=1)(*_copy(args))))
        gg = None
        if through_njit:  # grad(grad) is reverse over reverse through a generated njit function too
            gg = _try(lambda: zymase.grad(zymase.grad(f, argnums=1), argnums=1)(*_copy(args)), notes,
                      "grad(grad(f, 1), 1)")
        if gg is not None:
            tight("grad(grad(f, 1), 1) vs hessian(f, 1)", gg, haa)
        grad1 = zymase.grad(f, argnums=1)
        fds = []
        for step in FD_STEPS:
            h = step * max(1.0, abs(a))
            fds.append((float(grad1(x.copy(), a + h)) - float(grad1(x.copy(), a - h))) / ((a + h) - (a - h)))
        scalar = {"haa": haa, "fd": fds}
    return {"primal": fx, "grad_max": float(np.max(np.abs(g0))), "rev": rev, "fd": fd, "second": second,
            "lane": lanes, "scalar": scalar, "n": n}


def _second_ok(hjj: float, fd2: float, h: float, fx: float) -> bool:
    tol = SECOND_DIFF_RTOL * max(1.0, abs(hjj)) + 8e-16 * max(1.0, abs(fx)) / (h * h)
    return math.isfinite(fd2) and abs(hjj - fd2) <= tol


def compare_hessian(points: dict) -> tuple[str, str]:
    """('right' | 'wrong' | 'invalid', detail), the points compared in pairs (0, 1) and
    (2, 3) (the kink rule within a pair)."""
    from .check_c import _fd_ok

    for pair in ((0, 1), (2, 3)):
        pts = {p: points[p] for p in pair if p in points}
        if not pts:
            continue
        # tight lanes and the Hessian against finite differences of the gradient: compare_outputs
        # (the Hessian is "rev" and "fwd" at once; its primal is the gradient's size)
        as_c = {p: {"primal": r["grad_max"], "rev": r["rev"], "fwd": r["rev"], "fd": r["fd"], "lane": r["lane"]}
                for p, r in pts.items()}
        kind, detail = compare_outputs(as_c, fast=False)
        if kind != "right":
            return kind, _entry_names(detail, pts)
        bad_points = []
        for p, r in pts.items():
            for j, diffs in r["second"].items():
                hjj = r["rev"][j * r["n"] + j]
                if not any(_second_ok(hjj, fd2, h, r["primal"]) for fd2, h in diffs):
                    bad_points.append(f"point {p} H[{j},{j}] {hjj!r} vs second differences of f "
                                      f"{[fd2 for fd2, _ in diffs]}")
                    break
            s = r["scalar"]
            if s and not _fd_ok(s["haa"], s["fd"], r["grad_max"]):
                bad_points.append(f"point {p} d2f/da2 {s['haa']!r} vs finite differences of grad(f, 1) {s['fd']}")
        if len(pts) == 2 and len({b.split()[1] for b in bad_points}) == 2:
            return "wrong", "; ".join(bad_points)
    return "right", ""


def _entry_names(detail: str, pts: dict) -> str:
    """compare_outputs' ``d/dxK`` made ``H[i,j]`` (K = i * n + j)."""
    import re

    n = next(iter(pts.values()))["n"]
    return re.sub(r"d/dx(\d+)", lambda m: f"H[{int(m.group(1)) // n},{int(m.group(1)) % n}]", detail)


def _extended(args0, args1) -> list:
    """Two points at 9..12 elements from gen_njit's two (the constant indices stay below
    5, loops run to n): the chunked Hessian (more than CHUNK elements)."""
    x0, x1 = args0[0], args1[0]
    size = CHUNK + 1 + (x0.shape[0] + x1.shape[0]) % 4
    out = []
    for a, b in ((args0, args1), (args1, args0)):
        x = np.concatenate([a[0], b[0][::-1], a[0]])[:size].copy()
        out.append((x,) + tuple(a[1:]))
    return out


def check_hessian_source(text: str, extended: bool = True, through_njit: bool = True) -> Outcome:
    """The outcome of ``text`` (a gen_njit module); ``extended``: also at the two points
    past one chunk; ``through_njit``: also reverse over reverse and reverse over forward
    through njit code calling ``grad`` and ``jvp`` (their O3 compile is most of a
    program's time)."""
    from zymase.errors import ZymaseError

    loaded = load_points(text, LEVEL, (lambda pts: dict(zip((2, 3), _extended(pts[0], pts[1])))) if extended else None)
    if isinstance(loaded, Outcome):
        return loaded
    mod, points = loaded
    notes: list[str] = []
    try:
        results = {p: _point(mod, args, notes, through_njit) for p, args in points.items()}
    except ZymaseError as err:
        return Outcome("refused", LEVEL, err.format())
    except Exception as exc:
        return Outcome("crashed", LEVEL, f"internal error: raised {type(exc).__name__}: {str(exc)[:300]}")
    kind, detail = compare_hessian(results)
    if kind == "right" and notes:
        detail = sorted(set(notes))[0]
    output = json.dumps({str(p): {k: v for k, v in r.items() if k != "lane"} for p, r in results.items()}, indent=1)
    return Outcome(kind, LEVEL, detail, output)


def main(argv: list[str]) -> int:
    from .check_njit import run_seeds
    from .gen_njit import generate_njit

    return run_seeds(argv, generate_njit, check_hessian_source)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
