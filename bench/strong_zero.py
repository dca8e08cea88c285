#!/usr/bin/env python3
"""What strong zeros cost: each benchmark workload's gradient built with strong zeros
(the default) and with ``--no-strong-zero`` (IEEE ``0 * inf = NaN``), run alternately on
the same inputs, reported as the ratio of the best times (strong / IEEE).

Strong zeros guard each adjoint or tangent term whose partial read a primal value
(``dy == 0 ? 0 : dy * partial``); this measures what the guards cost after LLVM.

    python bench/strong_zero.py [--only gmm lstm ...] [--rounds R] [--march native|generic]
                                [--baseline /path/to/other/src]

``--baseline SRC`` also builds the strong-zero gradient with another source tree and
reports this tree's strong-zero time against it (a change to the guards, side by side).
"""

from __future__ import annotations

import argparse
import os
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
    p.add_argument("--baseline", type=Path, help="another zymase source tree (src/) for a third build")
    ns = p.parse_args()
    cases = [c for c in suite(quick=True) if ns.only is None or c.workload.name in ns.only]
    env = {"BENCH_FD": "0", "BENCH_PRIMAL": "0", "BENCH_MIN_S": "0.05", "BENCH_REPEATS": "3"}
    flags = march_flags(ns.march)
    with tempfile.TemporaryDirectory(prefix="zymase-strong-zero-") as tmp:
        work = Path(tmp)
        builds: dict[tuple[str, str], Path] = {}
        variants = [("strong", (), None), ("ieee", ("--no-strong-zero",), None)]
        if ns.baseline:
            variants.append(("baseline", (), ns.baseline.resolve()))
            print("| case | strong zero (ms) | IEEE (ms) | strong / IEEE | baseline (ms) | strong / baseline |\n"
                  "|---|---:|---:|---:|---:|---:|")
        else:
            print(f"| case | strong zero (ms) | IEEE (ms) | strong / IEEE |\n|---|---:|---:|---:|")
        for case in cases:
            w = case.workload
            for variant, extra, src in variants:
                if (w.name, variant) in builds:
                    continue
                exe = work / f"{w.name}.{variant}"
                argv, _ = native.build_command(w, "preopt", w.source, exe, flags)
                argv = argv[:4] + list(extra) + argv[4:]  # after `python -m zymase.cli cc`
                # a derivative cache of its own: two trees of one version share cache keys
                env_build = {**os.environ, "ZYMASE_CACHE_DIR": str(work / f"cache.{variant}")}
                if src is not None:
                    env_build["PYTHONPATH"] = str(src) + os.pathsep + env_build.get("PYTHONPATH", "")
                proc = subprocess.run(argv, capture_output=True, text=True, env=env_build)
                if proc.returncode != 0:
                    print(f"build of {w.name} ({variant}) failed:\n{proc.stderr}", file=sys.stderr)
                    return 1
                builds[(w.name, variant)] = exe
            args, _ = case.prepare(work, None)
            best = {v: float("inf") for v, _, _ in variants}
            for _ in range(ns.rounds):
                for variant in best:
                    run = native.run(builds[(w.name, variant)], args, env, 600)
                    if run.error:
                        print(f"{case.name} ({variant}): {run.error}", file=sys.stderr)
                        return 1
                    best[variant] = min(best[variant], run.report["grad_s"])
            line = (f"| {case.name} | {best['strong'] * 1e3:.3f} | {best['ieee'] * 1e3:.3f} | "
                    f"{best['strong'] / best['ieee']:.3f} |")
            if ns.baseline:
                line += f" {best['baseline'] * 1e3:.3f} | {best['strong'] / best['baseline']:.3f} |"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
