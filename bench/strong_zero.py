#!/usr/bin/env python3
"""What strong zeros cost: each benchmark workload's gradient built with strong zeros
(the default) and with ``--no-strong-zero`` (IEEE ``0 * inf = NaN``), run alternately on
the same inputs, reported as the ratio of the best times (strong / IEEE).

Strong zeros guard each adjoint or tangent term whose partial read a primal value
(``dy == 0 ? 0 : dy * partial``); this measures what the guards cost after LLVM.

    python bench/strong_zero.py [--only gmm lstm ...] [--rounds R] [--march native|generic]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from zymase.bench import native
from zymase.bench.cases import suite
from zymase.bench.runner import march_flags


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--rounds", type=int, default=5, help="alternating runs of each build per case")
    p.add_argument("--march", default="native")
    ns = p.parse_args()
    cases = [c for c in suite(quick=True) if ns.only is None or c.workload.name in ns.only]
    env = {"BENCH_FD": "0", "BENCH_PRIMAL": "0", "BENCH_MIN_S": "0.05", "BENCH_REPEATS": "3"}
    flags = march_flags(ns.march)
    with tempfile.TemporaryDirectory(prefix="zymase-strong-zero-") as tmp:
        work = Path(tmp)
        builds: dict[tuple[str, str], Path] = {}
        print(f"| case | strong zero (ms) | IEEE (ms) | strong / IEEE |\n|---|---:|---:|---:|")
        for case in cases:
            w = case.workload
            for variant, extra in (("strong", ()), ("ieee", ("--no-strong-zero",))):
                if (w.name, variant) in builds:
                    continue
                exe = work / f"{w.name}.{variant}"
                argv, _ = native.build_command(w, "preopt", w.source, exe, flags)
                argv = argv[:4] + list(extra) + argv[4:]  # after `python -m zymase.cli cc`
                proc = subprocess.run(argv, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"build of {w.name} ({variant}) failed:\n{proc.stderr}", file=sys.stderr)
                    return 1
                builds[(w.name, variant)] = exe
            args, _ = case.prepare(work, None)
            best = {"strong": float("inf"), "ieee": float("inf")}
            for _ in range(ns.rounds):
                for variant in best:
                    run = native.run(builds[(w.name, variant)], args, env, 600)
                    if run.error:
                        print(f"{case.name} ({variant}): {run.error}", file=sys.stderr)
                        return 1
                    best[variant] = min(best[variant], run.report["grad_s"])
            print(f"| {case.name} | {best['strong'] * 1e3:.3f} | {best['ieee'] * 1e3:.3f} | "
                  f"{best['strong'] / best['ieee']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
