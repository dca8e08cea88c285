"""Checkpointing under a tape limit (issue 27 item 4): the reaction-diffusion workload of
`zymase bench` (src/zymase/bench/workloads/ode.c, unchanged) built with and without
`--tape-limit`, its gradient timed and its peak memory measured.

    python bench/checkpoint_memory.py [--limit 16M] [--cells 64] [--steps 200000]
                                      [--long 2000000] [--rounds 5] [--unlimited-long]

Rounds alternate the unlimited and the limited build; the script prints per round the
gradient time (the workload's own `grad_s`, one call) and the peak RSS (`/usr/bin/time`),
then the median ratio limited/unlimited, and the limited build at `--long` steps (the
unlimited tape there is about 2.5 GB: only with `--unlimited-long`). Both builds are first
checked against finite differences at 2,000 steps (the workload's own check).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKLOADS = Path(__file__).resolve().parent.parent / "src" / "zymase" / "bench" / "workloads"


def build(out: Path, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "zymase.cli", "cc", "--no-cache", "-O2", *extra, "-I", str(WORKLOADS),
           str(WORKLOADS / "ode.c"), "-o", str(out), "-lm"]
    subprocess.run(cmd, check=True)


def run(exe: Path, cells: int, steps: int, *, fd: bool = False) -> tuple[dict, int]:
    env = dict(os.environ, BENCH_PRIMAL="0", BENCH_FD="1" if fd else "0", BENCH_REPEATS="1", BENCH_MIN_S="0")
    proc = subprocess.run(["/usr/bin/time", "-f", "peak_kib=%M", str(exe), str(cells), str(steps)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{exe.name} failed:\n{proc.stdout}{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    peak = int(proc.stderr.strip().splitlines()[-1].split("=")[1])
    return result, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", default="16M")
    ap.add_argument("--cells", type=int, default=64)
    ap.add_argument("--steps", type=int, default=200_000)
    ap.add_argument("--long", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--unlimited-long", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zymase-ckpt-") as tmp:
        unlimited, limited = Path(tmp) / "ode_unlimited", Path(tmp) / "ode_limited"
        build(unlimited, [])
        build(limited, [f"--tape-limit={args.limit}"])
        for exe in (unlimited, limited):
            res, _ = run(exe, args.cells, 2000, fd=True)
            print(f"{exe.name}: max relative error against finite differences {res['max_rel_err_fd']:.2e}")
        times = {unlimited: [], limited: []}
        peaks = {unlimited: [], limited: []}
        for r in range(args.rounds):
            for exe in (unlimited, limited):
                res, peak = run(exe, args.cells, args.steps)
                times[exe].append(res["grad_s"])
                peaks[exe].append(peak)
                print(f"round {r}: {exe.name:14s} {args.steps} steps: grad {res['grad_s']:.3f} s, peak RSS {peak / 1024:.1f} MiB")
        ratios = [a / b for a, b in zip(times[limited], times[unlimited])]
        print(f"{args.steps} steps, limit {args.limit}: time limited/unlimited median {statistics.median(ratios):.2f} "
              f"(rounds {', '.join(f'{x:.2f}' for x in ratios)}); peak RSS {max(peaks[limited]) / 1024:.1f} MiB "
              f"limited, {max(peaks[unlimited]) / 1024:.1f} MiB unlimited")
        res, peak = run(limited, args.cells, args.long)
        print(f"{args.long} steps, limit {args.limit}: grad {res['grad_s']:.2f} s, peak RSS {peak / 1024:.1f} MiB")
        if args.unlimited_long:
            res_u, peak_u = run(unlimited, args.cells, args.long)
            print(f"{args.long} steps unlimited: grad {res_u['grad_s']:.2f} s, peak RSS {peak_u / 1024:.1f} MiB; "
                  f"time ratio {res['grad_s'] / res_u['grad_s']:.2f}")


if __name__ == "__main__":
    main()
