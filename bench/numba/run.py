"""Numba benchmarks of issue 4: zymase.grad of @numba.njit objectives against the Numba
primal and against jax.jit(jax.grad(...)) on the same data.

    python bench/numba/run.py [--quick] [--json FILE] [--no-jax] [--only gmm,kpp,lstm]

Workloads (one module each): gmm (ADBench GMM), kpp (Fisher-KPP explicit Euler),
lstm (ADBench LSTM). Prints a Markdown table and the targets; exits nonzero when a
zymase gradient fails or disagrees with JAX (rel. diff > 1e-6) or finite differences.
"""

from __future__ import annotations

import os

# One thread everywhere, set before NumPy/Numba/JAX read them.
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

from zymase.bench.frameworks.worker import pin_to_one_cpu  # noqa: E402

# XLA's Eigen thread pools run on every CPU the process may use, whatever XLA_FLAGS say
pin_to_one_cpu()

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402
import gmm  # noqa: E402
import kpp  # noqa: E402
import lstm  # noqa: E402

WORKLOADS = {"gmm": gmm, "kpp": kpp, "lstm": lstm}
RATIO_TARGET = 3.0      # zymase gradient <= 3x the Numba primal
JAX_RTOL = 1e-6         # zymase vs JAX gradient, normwise per argument
FD_RTOL = 1e-5          # zymase vs fourth-order central differences, per checked entry


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _jax():
    """jax with float64 enabled, or None when it is not installed."""
    if importlib.util.find_spec("jax") is None:
        return None
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def run_zymase(mod, args, min_s, repeats) -> dict:
    import zymase

    res: dict = {}
    # as a user would: run the function in Numba first, then ask for its gradient
    t0 = time.perf_counter()
    value = mod.objective(*args)
    res["numba_compile_s"] = time.perf_counter() - t0
    res["value"] = float(value)
    before = len(zymase.stats())
    g = zymase.grad(mod.objective, mod.ARGNUMS)
    t0 = time.perf_counter()
    grads = common.as_tuple(g(*args), mod.ARGNUMS)
    res["first_call_s"] = time.perf_counter() - t0
    recs = zymase.stats()[before:]
    res["compile_s"] = sum(r.total for r in recs)
    res["compile_phases_s"] = {}
    for r in recs:
        for k, v in r.phases.items():
            res["compile_phases_s"][k] = res["compile_phases_s"].get(k, 0.0) + v

    res["numba_primal_s"] = common.best_time(lambda: mod.objective(*args), min_s, repeats)
    res["zymase_grad_s"] = common.best_time(lambda: g(*args), min_s, repeats)
    res["ratio"] = res["zymase_grad_s"] / res["numba_primal_s"]
    res["_grads"] = grads
    return res


def run_jax(jax, mod, args, grads, min_s, repeats) -> dict:
    import jax.numpy as jnp

    f = mod.jax_objective()
    # differentiated arguments are traced; the other scalars (ints, gamma) are static,
    # as a JAX user passes sizes and hyperparameters
    static = tuple(i for i, a in enumerate(args) if i not in mod.ARGNUMS and not isinstance(a, np.ndarray))
    jargs = tuple(a if i in static else jnp.asarray(a, dtype=jnp.float64) for i, a in enumerate(args))
    jg = jax.jit(jax.grad(f, argnums=mod.ARGNUMS), static_argnums=static)
    t0 = time.perf_counter()
    jgrads = common.as_tuple(jax.block_until_ready(jg(*jargs)), mod.ARGNUMS)
    res = {"compile_s": time.perf_counter() - t0}
    res["value"] = float(jax.jit(f, static_argnums=static)(*jargs))
    res["grad_s"] = common.best_time(lambda: jax.block_until_ready(jg(*jargs)), min_s, repeats)
    res["max_rel_diff"] = common.max_rel_diff(grads, [np.asarray(x) for x in jgrads])
    return res


def run_workload(name, quick, jax, min_s, repeats) -> dict:
    mod = WORKLOADS[name]
    sizes = mod.QUICK if quick else mod.FULL
    args = mod.make_inputs(**sizes)
    row: dict = {"workload": name, "size": mod.size_label(sizes), "sizes": sizes}
    _log(f"[{name}] {row['size']}: zymase compile + timing")
    try:
        row.update(run_zymase(mod, args, min_s, repeats))
    except Exception as e:  # a zymase failure is a result to report, not a crash
        row["error"] = f"{type(e).__name__}: {e}"
        _log(traceback.format_exc())
        return row
    grads = row.pop("_grads")
    _log(f"[{name}] finite differences")
    row["fd"] = common.fd_check(mod.objective, args, mod.ARGNUMS, mod.ARGNAMES, grads, FD_RTOL)
    row["fd_ok"] = all(r["ok"] for r in row["fd"])
    row["fd_max_rel_err"] = max(r["rel_err"] for r in row["fd"])
    if jax is not None:
        _log(f"[{name}] JAX")
        try:
            row["jax"] = run_jax(jax, mod, args, grads, min_s, repeats)
        except Exception as e:
            row["jax"] = {"error": f"{type(e).__name__}: {e}"}
            _log(traceback.format_exc())
    return row


def _ms(s) -> str:
    return "—" if s is None else f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _ok(flag) -> str:
    return "—" if flag is None else ("yes" if flag else "**no**")


def report(rows, jax_installed: bool) -> tuple[str, bool]:
    """The Markdown table and targets, and whether every gradient is correct."""
    lines = ["| workload | size | Numba primal | zymase grad | grad/primal | zymase compile (stats; first call) "
             "| JAX jit(grad) | speed-up vs JAX | max rel diff vs JAX | FD check |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    correct = True
    targets = []
    for r in rows:
        if "error" in r:
            correct = False
            lines.append(f"| {r['workload']} | {r['size']} | zymase failed: {r['error'].splitlines()[0][:120]} "
                         "| | | | | | | |")
            targets.append((r["workload"], None, None))
            continue
        j = r.get("jax") or {}
        jt = j.get("grad_s")
        speedup = jt / r["zymase_grad_s"] if jt else None
        diff = j.get("max_rel_diff")
        if diff is not None and not diff <= JAX_RTOL:
            correct = False
        if not r["fd_ok"]:
            correct = False
        lines.append(
            f"| {r['workload']} | {r['size']} | {_ms(r['numba_primal_s'])} | {_ms(r['zymase_grad_s'])} "
            f"| {r['ratio']:.2f}x | {r['compile_s']:.2f} s; {r['first_call_s']:.2f} s "
            f"| {_ms(jt) if jt else ('error' if 'error' in j else '—')} "
            f"| {f'{speedup:.2f}x' if speedup else '—'} | {f'{diff:.1e}' if diff is not None else '—'} "
            f"| {'ok' if r['fd_ok'] else '**FAIL**'} ({r['fd_max_rel_err']:.1e}) |")
        targets.append((r["workload"], r["ratio"] <= RATIO_TARGET, (speedup > 1.0) if speedup else None))
    lines.append("")
    lines.append(f"Targets: zymase gradient <= {RATIO_TARGET:g}x the Numba primal; faster than JAX's gradient"
                 + ("" if jax_installed else " (JAX not installed: not measured)") + ".")
    lines.append("")
    lines.append("| workload | grad <= 3x primal | faster than JAX |")
    lines.append("|---|---|---|")
    for w, a, b in targets:
        lines.append(f"| {w} | {_ok(a)} | {_ok(b)} |")
    return "\n".join(lines), correct


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes and short batches (smoke run)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--no-jax", action="store_true", help="skip the JAX comparison")
    p.add_argument("--only", default="gmm,kpp,lstm", help="comma-separated workloads (default: all)")
    p.add_argument("--min-s", type=float, default=None, help="seconds per timing batch (default 0.2; 0.05 quick)")
    p.add_argument("--repeats", type=int, default=None, help="timing batches, best wins (default 5; 3 quick)")
    a = p.parse_args(argv)
    names = [n.strip() for n in a.only.split(",") if n.strip()]
    for n in names:
        if n not in WORKLOADS:
            p.error(f"unknown workload {n!r} (choose from {', '.join(WORKLOADS)})")
    min_s = a.min_s if a.min_s is not None else (0.05 if a.quick else 0.2)
    repeats = a.repeats if a.repeats is not None else (3 if a.quick else 5)
    jax = None if a.no_jax else _jax()

    rows = [run_workload(n, a.quick, jax, min_s, repeats) for n in names]
    for r in rows:
        for c in r.get("fd", []):
            _log(f"  FD {r['workload']}.{c['arg']}[{c['index']}]: zymase {c['ad']:.12g}  fd {c['fd']:.12g}  "
                 f"rel err {c['rel_err']:.1e}{'' if c['ok'] else '  FAIL'}")
        if "jax" in r:
            _log(f"  JAX {r['workload']}: max rel diff {r['jax'].get('max_rel_diff', float('nan')):.2e}, "
                 f"value numba {r.get('value')} jax {r['jax'].get('value')}")
    table, correct = report(rows, jax is not None)
    print(table)
    if a.json:
        import numba

        meta = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
                "jax": getattr(jax, "__version__", None), "machine": platform.machine(),
                "cpus": os.cpu_count(), "quick": a.quick, "min_s": min_s, "repeats": repeats,
                "targets": {"ratio_max": RATIO_TARGET, "jax_rtol": JAX_RTOL, "fd_rtol": FD_RTOL}}
        Path(a.json).write_text(json.dumps({"meta": meta, "results": rows}, indent=2) + "\n")
    if not correct:
        print("\nzymase's gradient failed or disagreed on at least one workload.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
