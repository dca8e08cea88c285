"""Compile time of the first ``zymase.grad`` call against Numba's compile of the primal
(issue 29: the first grad call at most 2x Numba's own compile time of the primal).

For each workload (bench/numba's gmm, kpp, lstm and the three larger functions of
bench/numba/larger.py) and each zymase source tree given with ``--zymase label=src``,
a fresh Python process (round after round, variants and workloads alternating, so that
the load of a shared machine falls on all alike):

  1. imports NumPy, Numba and the workload (not timed);
  2. ``numba start``: the first call of a one-line njit function (Numba's one-time
     start-up: its target context, runtime and typing registries);
  3. ``primal``: the first call of the objective, i.e. Numba's compile of it (with the
     start-up already paid);
  4. ``grad``: ``zymase.grad(f, argnums, cache=False)`` and its first call, as a user
     calls it after running the primal; the phases are ``zymase.stats()``'s
     (``numba`` is the private unoptimized copy, ``trampoline`` the njit function the
     gradient is called through; ``other`` is the rest of the wall time, mostly
     importing the engine).

Prints, per workload and variant, medians (wall seconds; CPU seconds in brackets, the
less noisy figure on a shared machine) and the ratios grad / primal and
grad / (start + primal) (the latter is what a user's first njit call costs in a fresh
process). The gradients of every variant are compared with each other.

The child processes use ``PYTHONPYCACHEPREFIX`` under the temporary directory (bytecode
is compiled once, in a discarded warm-up round, as an installed package's would be) and
an empty ``ZYMASE_CACHE_DIR``. Run from the repository root:

  python bench/numba_first_call.py --zymase before=/work/main/src --zymase after=src --rounds 5
  python bench/numba_first_call.py --only kpp solar --rounds 3
  python bench/numba_first_call.py --sizes          # the functions' sizes only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
NUMBA_BENCH = ROOT / "numba"
WORKLOADS = ("gmm", "kpp", "lstm", "solar", "md", "mlp")


def _workload(name: str):
    """(objective, argnums, args) of a workload, imported from bench/numba."""
    sys.path.insert(0, str(NUMBA_BENCH))
    import importlib

    if name in ("gmm", "kpp", "lstm"):
        mod = importlib.import_module(name)
        return mod.objective, mod.ARGNUMS, mod.make_inputs(**mod.TINY)
    larger = importlib.import_module("larger")
    f, argnums, make = larger.WORKLOADS[name]
    return f, argnums, make()


def child(name: str) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    import types

    import numba
    import numpy as np

    f, argnums, args = _workload(name)

    def timed(fn):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        return out, time.perf_counter() - w, time.process_time() - c

    _, start_w, start_c = timed(lambda: numba.njit(lambda x: x + 1.0)(1.0))
    _, primal_w, primal_c = timed(lambda: f(*args))
    import zymase

    # what the first zymase.grad imports (the engine, xDSL's dialects), timed apart: the
    # attribute, as a user's first zymase.grad, imports zymase.api
    _, import_w, import_c = timed(lambda: zymase.grad)
    import zymase.frontends.c
    import zymase.frontends.numba
    import zymase.frontends.numba_copy

    # zymase.stats()'s phases in CPU seconds (wall time says little on a shared machine)
    cpu = types.SimpleNamespace(perf_counter=time.process_time)
    for module in (zymase.api, zymase.frontends.c, zymase.frontends.numba, zymase.frontends.numba_copy):
        module.time = cpu
    grads, grad_w, grad_c = timed(lambda: zymase.grad(f, argnums, cache=False)(*args))
    grad_w, grad_c = grad_w + import_w, grad_c + import_c
    phases: dict[str, float] = {"import": import_c}
    for rec in zymase.stats():
        for k, v in rec.phases.items():
            k = "read" if k == "import" else k  # the reader's phase, not Python's imports
            phases[k] = phases.get(k, 0.0) + v
    phases["other"] = grad_c - sum(phases.values())
    flat = np.concatenate([np.ravel(np.asarray(g, dtype=np.float64)) for g in grads])
    print(json.dumps({"workload": name, "start": [start_w, start_c], "primal": [primal_w, primal_c],
                      "grad": [grad_w, grad_c], "phases": phases, "gradient": flat.tolist()}))


def sizes() -> None:
    """Source lines (the objective and the njit functions it calls) and instructions
    of Numba's optimized LLVM IR of the primal, per workload."""
    import inspect

    from numba.core.registry import CPUDispatcher

    for name in WORKLOADS:
        f, argnums, args = _workload(name)
        f(*args)
        seen, work, lines = set(), [f], 0
        while work:
            d = work.pop()
            if d in seen:
                continue
            seen.add(d)
            lines += len(inspect.getsource(d.py_func).splitlines())
            py = d.py_func
            work += [py.__globals__[n] for n in py.__code__.co_names
                     if isinstance(py.__globals__.get(n), CPUDispatcher)]
        ir = next(iter(f.inspect_llvm().values()))
        insts = sum(1 for ln in ir.splitlines() if ln.startswith("  ") and not ln.lstrip().startswith(";"))
        print(f"{name:6s} {len(seen)} njit functions, {lines} source lines, {insts} instructions (Numba -O3 IR)")


def _run(src: str, name: str, tmp: Path, label: str) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"PYTHONPATH": f"{src}{os.pathsep}{NUMBA_BENCH}", "PYTHONPYCACHEPREFIX": str(tmp / f"pyc-{label}"),
                "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    with tempfile.TemporaryDirectory(dir=tmp) as cache:
        env["ZYMASE_CACHE_DIR"] = cache
        proc = subprocess.run([sys.executable, __file__, "--child", name], env=env, capture_output=True,
                              text=True, timeout=600)
    if proc.returncode != 0:
        sys.exit(f"{label} {name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _med(rows, key, i):
    return statistics.median(r[key][i] for r in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zymase", action="append", metavar="LABEL=SRC",
                    help="a zymase source tree to measure (repeatable; default: this checkout's src)")
    ap.add_argument("--only", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--sizes", action="store_true", help="print the workloads' sizes and exit")
    a = ap.parse_args(argv)
    if a.child:
        child(a.child)
        return 0
    if a.sizes:
        sizes()
        return 0
    variants = [v.split("=", 1) for v in (a.zymase or [f"this={ROOT.parent / 'src'}"])]
    results: dict = {(label, w): [] for label, _ in variants for w in a.only}
    with tempfile.TemporaryDirectory(prefix="numba-first-call-") as tmpdir:
        tmp = Path(tmpdir)
        for label, src in variants:  # warm-up: bytecode compiled, not measured
            _run(src, a.only[0], tmp, label)
        for r in range(a.rounds):
            for w in a.only:
                order = variants if r % 2 == 0 else variants[::-1]
                for label, src in order:
                    results[(label, w)].append(_run(src, w, tmp, label))
                    print(f"round {r + 1} {w} {label}: grad {results[(label, w)][-1]['grad'][0]:.2f} s",
                          file=sys.stderr, flush=True)
    print(f"median of {a.rounds} rounds; wall s (CPU s); phases in CPU s; shared machine: compare ratios, not "
          "absolute times\n")
    print("| workload | variant | numba start | primal | first grad | grad/primal | grad/(start+primal) | phases |")
    print("|---|---|---|---|---|---|---|---|")
    for w in a.only:
        for label, _ in variants:
            rows = results[(label, w)]
            st, pr, gr = (_med(rows, k, 0) for k in ("start", "primal", "grad"))
            stc, prc, grc = (_med(rows, k, 1) for k in ("start", "primal", "grad"))
            keys = dict.fromkeys(k for row in rows for k in row["phases"])
            phases = " ".join(f"{k}={statistics.median(row['phases'].get(k, 0.0) for row in rows):.2f}"
                              for k in keys)
            print(f"| {w} | {label} | {st:.2f} ({stc:.2f}) | {pr:.2f} ({prc:.2f}) | {gr:.2f} ({grc:.2f}) | "
                  f"{gr / pr:.2f}x ({grc / prc:.2f}x) | {gr / (st + pr):.2f}x ({grc / (stc + prc):.2f}x) | "
                  f"{phases} |")
    # the variants' gradients agree (same engine semantics before and after)
    import numpy as np

    for w in a.only:
        ref = np.array(results[(variants[0][0], w)][0]["gradient"])
        for label, _ in variants[1:]:
            got = np.array(results[(label, w)][0]["gradient"])
            diff = float(np.max(np.abs(got - ref)) / max(float(np.max(np.abs(ref))), 1e-300))
            print(f"{w}: {label} vs {variants[0][0]} gradient max rel diff {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
