"""``zymase bench [--quick] [--json FILE] [--plots DIR] [--only NAME...] [--adbench DIR]``

Builds every workload four ways (clang -O2 primal; zymase with and without pre-AD
optimization; zymase counting tape bytes), runs each case in its own process, runs the
JAX and PyTorch versions on the data the C program dumped (when those are installed),
compares all gradients, and prints a Markdown table with the issue's targets. Exits 1 when
a build or run fails or a gradient is wrong (finite differences, or tools disagreeing);
missed performance targets are reported, not failures.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from zymase.bench import native
from zymase.bench.cases import Case, suite
from zymase.bench.compare import GRADIENT_TOLERANCE, pairwise_differences, relative_difference
from zymase.bench.dumpfile import gradients, read_dump
from zymase.bench.frameworks.worker import FRAMEWORKS, single_thread_env

ZYMASE = "zymase"
NOPREOPT = "zymase --no-preopt"
#: timing batches for --quick (seconds per batch, batches); the full run uses the C defaults
QUICK_TIMING = {"BENCH_MIN_S": "0.05", "BENCH_REPEATS": "2"}
#: seconds one case may run in one process before it is reported as timed out
RUN_TIMEOUT_S = 1800


def installed_frameworks() -> list[str]:
    return [f for f in FRAMEWORKS if importlib.util.find_spec(f) is not None]


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _run_case(case: Case, index: int, builds: dict[str, native.Build], work: Path, adbench: Path | None,
              timing_env: dict[str, str]) -> dict:
    """The C measurements of one case; the dumps are left in `work` for the frameworks."""
    result: dict = {"workload": case.workload.name, "title": case.workload.title, "size": case.label,
                    "params": case.params, "errors": [], "warnings": [], "tools": {}}
    try:
        args, result["data"] = case.prepare(work, adbench)
    except OSError as exc:
        result["errors"].append(f"inputs: {exc}")
        return result
    stem = work / f"case{index}-{case.workload.name}"

    def run(variant: str, env: dict[str, str]) -> dict:
        build = builds.get(variant)
        if build is None or variant in case.skip:
            return {}
        if build.exe is None:
            result["errors"].append(f"{variant}: {build.error}")
            return {}
        outcome = native.run(build.exe, args, {**timing_env, **env}, RUN_TIMEOUT_S)
        if outcome.segfaulted:
            # most likely the stack: measure anyway, and say so
            retry = native.run(build.exe, args, {**timing_env, **env}, RUN_TIMEOUT_S, big_stack=True)
            if not retry.error:
                result["warnings"].append(f"{variant}: crashed (SIGSEGV) with the default stack limit; "
                                          "measured with an unlimited stack")
                outcome = retry
        if outcome.error and variant == "nopreopt" and outcome.returncode == -signal.SIGKILL:
            # the kernel's OOM killer: AD before optimization can tape O(n^2) (normalize
            # keeps a copy of mag's loop per element) or gigabytes (large GMMs). That is
            # the baseline failing, not zymase's gradient: reported, not a failure
            result["warnings"].append(f"{variant}: killed by SIGKILL (out of memory, most likely): AD before "
                                      "optimization needs more memory than this machine has at this size")
            return {}
        if outcome.error:
            result["errors"].append(f"{variant}: {outcome.error}")
        return outcome.report

    primal = run("primal", {})
    result["primal_s"] = primal.get("primal_s")
    dumps = {ZYMASE: f"{stem}.preopt.dump", NOPREOPT: f"{stem}.nopreopt.dump"}
    preopt = run("preopt", {"BENCH_DUMP": dumps[ZYMASE]})
    result["primal_zymase_s"] = preopt.get("primal_s")
    result["grad_s"] = preopt.get("grad_s")
    result["max_rel_err_fd"] = preopt.get("max_rel_err_fd")
    # the finite-difference check ran above; here the gradient is compared with the dump
    nopreopt = run("nopreopt", {"BENCH_DUMP": dumps[NOPREOPT], "BENCH_FD": "0", "BENCH_PRIMAL": "0"})
    result["grad_nopreopt_s"] = nopreopt.get("grad_s")
    result["tape_bytes"] = run("tape", {"BENCH_MODE": "tape"}).get("tape_bytes")
    result["ratio"] = _ratio(result["grad_s"], result["primal_s"])
    result["ratio_nopreopt"] = _ratio(result["grad_nopreopt_s"], result["primal_s"])
    result["preopt_speedup"] = _ratio(result["grad_nopreopt_s"], result["grad_s"])
    result["dumps"] = {tool: path for tool, path in dumps.items() if Path(path).exists()}
    return result


def _run_framework(framework: str, model: str, results: list[dict], timing_env: dict[str, str]) -> None:
    """One process for the framework on all of one workload's cases that have a dump;
    ``model`` names the framework's version of the objective (Workload.model)."""
    todo = [r for r in results if ZYMASE in r.get("dumps", {})]
    if not todo:
        return
    argv = [sys.executable, "-m", "zymase.bench.frameworks.worker", framework, model,
            *(r["dumps"][ZYMASE] for r in todo)]
    env = {**os.environ, **timing_env, **single_thread_env()}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT_S * len(todo))
        lines = [json.loads(s) for s in proc.stdout.splitlines() if s.startswith("{")]
        stderr_tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
    except subprocess.TimeoutExpired:
        lines, stderr_tail = [], "timed out"
    by_dump = {line["dump"]: line for line in lines}
    for r in todo:
        line = by_dump.get(r["dumps"][ZYMASE])
        if line is None or "error" in line:
            # a framework failing is reported, but is not our gradient being wrong
            r["tools"][framework] = {"error": (line or {}).get("error", stderr_tail)}
            continue
        r["tools"][framework] = {
            "grad_s": line["grad_s"],
            "compile_s": line["first_call_s"],
            "ratio": _ratio(line["grad_s"], r.get("primal_s")),
            "objective": line["objective"],
            "gradient_file": line["gradient_file"],
        }


def _compare(result: dict) -> None:
    """All gradients of a case against each other (and the objective values)."""
    sets: dict[str, dict[str, np.ndarray]] = {}
    objectives: dict[str, float] = {}
    for tool, path in result.get("dumps", {}).items():
        arrays = read_dump(path)
        sets[tool] = gradients(arrays)
        objectives[tool] = float(arrays["objective"][0])
    for tool, info in result["tools"].items():
        if "gradient_file" in info:
            with np.load(info["gradient_file"]) as saved:
                sets[tool] = {name: saved[name] for name in saved.files}
            objectives[tool] = info["objective"]
    result["gradient_diff"] = pairwise_differences(sets)
    result["objective_diff"] = {
        f"{ZYMASE} vs {tool}": relative_difference(objectives[ZYMASE], value)
        for tool, value in objectives.items() if tool != ZYMASE and ZYMASE in objectives
    }
    result["max_gradient_diff"] = max(result["gradient_diff"].values(), default=None)
    for pair, diff in result["gradient_diff"].items():
        if not diff <= GRADIENT_TOLERANCE:
            result["errors"].append(f"gradients differ: {pair}: max rel. diff {diff:.2e}")


def run_suite(cases: list[Case], work: Path, *, adbench: Path | None = None, frameworks: list[str] = (),
              timing_env: dict[str, str] | None = None, variants: tuple[str, ...] = native.VARIANTS,
              flags: tuple[str, ...] = ()) -> list[dict]:
    """Every case's measurements, as JSON-ready dicts (``ok`` says whether it passed);
    ``flags`` go to every C build (primal and gradients alike)."""
    timing_env = dict(timing_env or {})
    by_workload: dict[str, list[Case]] = {}
    for case in cases:
        by_workload.setdefault(case.workload.name, []).append(case)
    results: list[dict] = []
    index = 0
    for name, workload_cases in by_workload.items():
        workload = workload_cases[0].workload
        builds: dict[str, native.Build] = {}
        for variant in variants:
            _log(f"  build {name} ({variant})")
            builds[variant] = native.build(workload, variant, work, flags)
        workload_results = []
        for case in workload_cases:
            _log(f"  run {case.name}")
            index += 1
            r = _run_case(case, index, builds, work, adbench, timing_env)
            r["compile_s"] = builds["preopt"].seconds if "preopt" in builds else None
            r["compile_nopreopt_s"] = builds["nopreopt"].seconds if "nopreopt" in builds else None
            workload_results.append(r)
        for framework in frameworks:
            _log(f"  {framework} {name}")
            _run_framework(framework, workload.model, workload_results, timing_env)
        for r in workload_results:
            _compare(r)
            r["ok"] = not r["errors"] and r.get("grad_s") is not None
        results += workload_results
    return results


def _framework_versions(frameworks: list[str]) -> dict[str, str | None]:
    versions = {}
    for f in FRAMEWORKS:
        if f not in frameworks:
            versions[f] = None
            continue
        try:
            from importlib.metadata import version

            versions[f] = version(f)
        except Exception:
            versions[f] = "installed"
    return versions


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="zymase bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a subset of the sizes, short timing batches (minutes)")
    p.add_argument("--json", metavar="FILE", help="write all measurements as JSON")
    p.add_argument("--plots", metavar="DIR", help="write PNG plots (needs matplotlib)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these workloads (gmm gmm_tuned ba lstm hand normalize normalize_tuned ode fft)")
    p.add_argument("--adbench", metavar="DIR", type=Path,
                   help="read ADBench's data files from DIR (gmm/, ba/, lstm/, hand/) where it has them")
    p.add_argument("--no-jax", action="store_true", help="skip the JAX comparison")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    p.add_argument("--keep", metavar="DIR", type=Path, help="keep builds, inputs and dumps in DIR")
    p.add_argument("--march", metavar="CPU", default="native",
                   help="build every C variant, the clang -O2 primal included, with -march=CPU. Default "
                        "native: this machine's vector instructions, which JAX's XLA and PyTorch compile "
                        "for too, so the comparison is at equal ISA; generic: clang's default (x86-64, SSE2)")
    return p.parse_args(argv)


def march_flags(march: str) -> tuple[str, ...]:
    """The C flags of ``--march``: ``generic`` adds none (clang's default target)."""
    return () if march == "generic" else (f"-march={march}",)


def main(argv: list[str] | None = None) -> int:
    from zymase.bench import report

    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    started = time.monotonic()
    cases = suite(args.quick)
    if args.only:
        unknown = set(args.only) - {c.workload.name for c in suite(False)}
        if unknown:
            print(f"zymase: error: unknown workload(s) {', '.join(sorted(unknown))}", file=sys.stderr)
            return 1
        cases = [c for c in cases if c.workload.name in args.only]
    frameworks = [f for f in installed_frameworks() if not getattr(args, f"no_{f}")]
    timing_env = {k: os.environ.get(k, v) for k, v in QUICK_TIMING.items()} if args.quick else {}
    flags = march_flags(args.march)
    _log(f"zymase bench: {len(cases)} cases; comparing with: {', '.join(frameworks) or 'nothing (no jax/torch)'}")

    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        results = run_suite(cases, args.keep, adbench=args.adbench, frameworks=frameworks, timing_env=timing_env,
                            flags=flags)
    else:
        with tempfile.TemporaryDirectory(prefix="zymase-bench-") as tmp:
            results = run_suite(cases, Path(tmp), adbench=args.adbench, frameworks=frameworks,
                                timing_env=timing_env, flags=flags)
    for r in results:  # the files are gone unless --keep
        r.pop("dumps", None)
        for info in r["tools"].values():
            info.pop("gradient_file", None)
    targets = report.evaluate_targets(results)
    wall = time.monotonic() - started
    summary = {
        "command": "zymase bench" + (" --quick" if args.quick else "") + f" --march {args.march}",
        "quick": args.quick,
        "c_flags": list(flags),
        "wall_s": wall,
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "python": platform.python_version()},
        "frameworks": _framework_versions(frameworks),
        "ok": all(r["ok"] for r in results),
        "cases": results,
        "targets": targets,
    }
    print(f"C builds: -O2 {' '.join(flags) or '(clang default target, generic x86-64)'}\n")
    print(report.markdown(results, targets, frameworks))
    print(f"\nwall time: {wall:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(_finite(summary), indent=1) + "\n")
    if args.plots:
        from zymase.bench import plots

        written = plots.write_plots(results, Path(args.plots))
        _log("plots: " + ", ".join(str(p) for p in written) if written else "plots: matplotlib is not installed")
    failed = [r for r in results if not r["ok"]]
    for r in failed:
        _log(f"FAILED {r['workload']} {r['size']}: {'; '.join(r['errors']) or 'no gradient time'}")
    return 1 if failed else 0


def _finite(value):
    """JSON-ready copy: numpy scalars as Python numbers, inf/nan (gradients that cannot be
    compared) as null, paths as strings."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value
