"""Compile time of ``zymase cc -O2`` against ``clang -O2`` on the same file (issue 29).

For each input (the bench workloads, tests/cxx/library_mix.cpp and vector_sums.cpp; at
the level ``--level`` gives, 2 by default) the variants are run in
turn, round after round (alternating, so that the load of a shared machine falls on all
of them alike), each as a fresh process writing an object file (``-c``: clang alone cannot
link the ``__enzyme_*`` calls):

  clang           clang -O2 -c
  <label>         zymase cc -O2 -c --no-cache, with PYTHONPATH=<src> (one per --zymase)
  <label> cached  the same with the derivative cache warm (only for sources that have
                  zymase/cache.py)

The zymase variants run with bytecode (``PYTHONDONTWRITEBYTECODE`` unset, a
``PYTHONPYCACHEPREFIX`` per tree, filled by the warm-up round), as an installed package
has it: compiling zymase's sources in every process would add about 0.3 s of CPU.

Prints per variant the median wall time and the median CPU time (user + system of the
process and its children: on a shared machine the less noisy of the two), their ratios
to clang's, and the median of each phase of ``--time`` (CPU) for the zymase variants,
with the median of the engine's Python phases (``import`` + ``AD`` + ``export``) in ms.
Run from the repository root:

  python bench/compile_time.py --zymase before=/work/main/src --zymase after=src --rounds 5
  python bench/compile_time.py --level 0 --only library_mix vector_sums --rounds 3
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "src" / "zymase" / "bench" / "workloads"
INPUTS = {
    "hand": (WORKLOADS / "hand.c", []),
    "gmm": (WORKLOADS / "gmm.c", []),
    "ba": (WORKLOADS / "ba.c", []),
    "lstm": (WORKLOADS / "lstm.c", []),
    "fft": (WORKLOADS / "fft.c", []),
    "ode": (WORKLOADS / "ode.c", []),
    "library_mix": (ROOT / "tests" / "cxx" / "library_mix.cpp", []),
    "vector_sums": (ROOT / "tests" / "cxx" / "vector_sums.cpp", []),
}
#: a row of ``--time`` (``other``, the CPU outside every phase, has no wall time)
PHASE_RE = re.compile(r"^  (\w+) +(?:([\d.]+) ms)? +([\d.]+) ms CPU$", re.M)


def _clang() -> str:
    for name in ("clang-19", "clang"):
        if shutil.which(name):
            return name
    sys.exit("no clang-19 or clang on PATH")


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of one run, and its stderr."""
    t0, c0 = time.perf_counter(), _cpu()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stderr}")
    return seconds, cpu, proc.stderr


def zymase_cc(label: str, src: str | Path, opt: str, work: Path) -> tuple[list[str], dict[str, str], bool]:
    """``zymase cc <opt> -c --time`` of the tree ``src`` (its src/ folder) as this benchmark
    runs it: the command, its environment, and whether the tree has the derivative cache (and
    so takes ``--no-cache``). The process runs with bytecode, as an installed package has it
    (written by a first, untimed build, kept per label under ``work``): with
    PYTHONDONTWRITEBYTECODE set, every build would compile zymase's sources."""
    src = str(Path(src).resolve())
    env = dict(os.environ, PYTHONPATH=src, ZYMASE_CACHE_DIR=str(work / f"cache-{label}"),
               PYTHONPYCACHEPREFIX=str(work / f"pyc-{label}"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    has_cache = (Path(src) / "zymase" / "cache.py").is_file()
    return [sys.executable, "-m", "zymase.cli", "cc", opt, "-c", "--time"], env, has_cache


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zymase", action="append", default=[], metavar="LABEL=SRC",
                   help="a zymase source tree to time (repeatable); default: this checkout's src")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", nargs="*", help="inputs to time (default: all)")
    p.add_argument("--level", default="2", choices="0123",
                   help="optimization level of every variant (default 2; C++ at -O0 is issue 24's slow case)")
    ns = p.parse_args()
    trees = [z.split("=", 1) for z in ns.zymase] or [["zymase", str(ROOT / "src")]]
    inputs = {k: v for k, v in INPUTS.items() if not ns.only or k in ns.only}
    clang = _clang()
    with tempfile.TemporaryDirectory(prefix="zymase-compile-time-") as tmp:
        work = Path(tmp)
        opt = f"-O{ns.level}"
        variants: list[tuple[str, list[str], dict[str, str]]] = [("clang", [clang, opt, "-c"], dict(os.environ))]
        for label, src in trees:
            cc, env, has_cache = zymase_cc(label, src, opt, work)
            variants.append((label, [*cc, *(["--no-cache"] if has_cache else [])], env))
            if has_cache:
                variants.append((f"{label} cached", cc, env))
        print(f"{len(inputs)} inputs, {ns.rounds} rounds, variants: {', '.join(v[0] for v in variants)}")
        for name, (source, flags) in inputs.items():
            walls: dict[str, list[float]] = {v[0]: [] for v in variants}
            cpus: dict[str, list[float]] = {v[0]: [] for v in variants}
            phases: dict[str, dict[str, list[float]]] = {v[0]: {} for v in variants}
            for r in range(ns.rounds + 1):  # round 0 warms the caches (file, derivative)
                for label, argv, env in variants:
                    seconds, cpu, err = _timed([*argv, *flags, str(source), "-o", str(work / "out.o")], env, work)
                    if r == 0:
                        continue
                    walls[label].append(seconds)
                    cpus[label].append(cpu)
                    for phase, _, cpu_ms in PHASE_RE.findall(err):
                        phases[label].setdefault(phase, []).append(float(cpu_ms) / 1000)
            base, base_cpu = statistics.median(walls["clang"]), statistics.median(cpus["clang"])
            print(f"\n== {name} ({source.name}, {sum(1 for _ in open(source))} lines)")
            print(f"  {'':<16} {'wall':>7} {'ratio':>6} {'CPU':>7} {'ratio':>6}  phases (CPU, s)")
            for label, _, _ in variants:
                wall, cpu = statistics.median(walls[label]), statistics.median(cpus[label])
                detail = "  ".join(f"{ph} {statistics.median(v):.2f}" for ph, v in phases[label].items()
                                   if ph != "total")
                engine = [sum(x) for x in zip(*(phases[label].get(ph, []) for ph in ("import", "AD", "export")))]
                if engine:  # the engine's Python (reader, AD, writer), finer than the rounded phases
                    detail += f"  (import+AD+export {statistics.median(engine) * 1000:.0f} ms)"
                print(f"  {label:<16} {wall:6.2f}s {wall / base:5.2f}x {cpu:6.2f}s {cpu / base_cpu:5.2f}x  {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
