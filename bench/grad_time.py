"""The bench workloads' gradients built by two (or more) zymase source trees, side by side
(issue 29: a change that makes the derivative IR smaller must not make the gradient slower).

Each workload (the first quick size of hand, gmm, ba, lstm, fft, ode) is built with
``zymase cc -O2 -march=<cpu> --no-cache`` by every tree given with ``--zymase``; then,
round after round, each build runs in turn (``BENCH_PRIMAL=0 BENCH_FD=0``: the gradient
only, best per-call time of a few batches), so that the load of a shared machine falls on
all alike. Prints per workload the best time of each build and its ratio to the first
tree's, and in brackets the median of the per-round ratios.

With ``--instructions`` nothing is timed: each build runs once under valgrind's callgrind
(``BENCH_MIN_S=0 BENCH_REPEATS=1``: a warm-up call and one more; ``-march=x86-64-v3``,
since valgrind does not decode AVX-512) and the instructions
executed inside ``run_grad`` are counted: deterministic, so it compares the builds on a
loaded machine, though an instruction is not a cycle.
Run from the repository root:

  python bench/grad_time.py --zymase before=/path/to/old/src --zymase after=src --rounds 5
  python bench/grad_time.py --zymase before=/path/to/old/src --zymase after=src --instructions
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMES = ("hand", "gmm", "ba", "lstm", "fft", "ode")


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{proc.stderr[-3000:]}")
    return proc


def cases(work: Path, only: list[str]) -> list[tuple[str, Path, tuple[str, ...], list[str]]]:
    """(name, source, flags, arguments) of the first quick size of each workload."""
    sys.path.insert(0, str(ROOT / "src"))
    from zymase.bench.cases import suite

    found, seen = [], set()
    for case in suite(quick=True):
        name = case.workload.name
        if name in seen or name not in only:
            continue
        seen.add(name)
        args, _ = case.prepare(work, None)
        found.append((name, case.workload.source, tuple(case.workload.flags), list(args)))
    return found


def build(source: Path, flags: tuple[str, ...], src: str, march: str, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": src}
    _run([sys.executable, "-m", "zymase.cli", "cc", "--no-cache",
          "-O2", f"-march={march}", *flags, "-I", str(source.parent), str(source), "-o", str(out), "-lm"], env)


def grad_seconds(exe: Path, args: list[str], min_s: float) -> float:
    env = {**os.environ, "BENCH_PRIMAL": "0", "BENCH_FD": "0", "BENCH_MIN_S": str(min_s), "BENCH_REPEATS": "3"}
    out = _run([str(exe), *args], env).stdout
    return json.loads(out.strip().splitlines()[-1])["grad_s"]


def grad_instructions(exe: Path, args: list[str]) -> int:
    env = {**os.environ, "BENCH_PRIMAL": "0", "BENCH_FD": "0", "BENCH_MIN_S": "0", "BENCH_REPEATS": "1"}
    proc = _run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--toggle-collect=run_grad",
                 str(exe), *args], env)
    match = re.search(r"Collected : (\d+)", proc.stderr)
    if match is None:
        sys.exit(f"no callgrind count for {exe}\n{proc.stderr[-2000:]}")
    return int(match.group(1))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--zymase", action="append", required=True, metavar="LABEL=SRC",
                   help="a zymase source tree to build with (repeatable; the first is the reference)")
    p.add_argument("--march", help="-march= for every build (default native; x86-64-v3 with --instructions: "
                   "valgrind does not decode AVX-512)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-s", type=float, default=0.05, help="seconds per timing batch")
    p.add_argument("--only", nargs="*", choices=NAMES, help="workloads (default: all six)")
    p.add_argument("--instructions", action="store_true", help="count run_grad's instructions under callgrind")
    ns = p.parse_args()
    trees = [z.split("=", 1) for z in ns.zymase]
    march = ns.march or ("x86-64-v3" if ns.instructions else "native")
    with tempfile.TemporaryDirectory(prefix="zymase-grad-time-") as tmp:
        work = Path(tmp)
        todo = cases(work, ns.only or list(NAMES))
        exes = {}
        for name, source, flags, _ in todo:
            for label, src in trees:
                exes[name, label] = work / f"{name}.{label}"
                build(source, flags, str(Path(src).resolve()), march, exes[name, label])
        for name, _, _, args in todo:
            if ns.instructions:
                counts = {label: grad_instructions(exes[name, label], args) for label, _ in trees}
                ref = counts[trees[0][0]]
                print(f"{name:5s} " + "  ".join(f"{label} {n:,} ({n / ref:.4f})" for label, n in counts.items()))
                continue
            samples: dict[str, list[float]] = {label: [] for label, _ in trees}
            for _ in range(ns.rounds):
                for label, _ in trees:
                    samples[label].append(grad_seconds(exes[name, label], args, ns.min_s))
            ref = trees[0][0]
            per_round = {label: statistics.median(a / b for a, b in zip(s, samples[ref])) for label, s in samples.items()}
            print(f"{name:5s} " + "  ".join(
                f"{label} {min(s) * 1e3:.4f} ms ({min(s) / min(samples[ref]):.3f} [{per_round[label]:.3f}])"
                for label, s in samples.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
