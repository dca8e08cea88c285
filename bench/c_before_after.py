"""One C benchmark program built by several zymase source trees and run alternately: the
times it prints, tree against the first tree, as ratios.

The program prints lines such as `lu fwd  n=200  width 4  11.90 ms  4 x width 1  15.01 ms ...`
(bench/lapack_width.c, lapack_ratio.c): every `<label> <number> ms` of a line is one timing,
named by the line's first words and that label. Each round runs every build once, in turn;
reported per timing: each tree's minimum over the rounds, the ratio of the minima to the
first tree's and the median of the per-round ratios (steadier on a shared machine).

    python bench/c_before_after.py --zymase before=/work/base29/src --zymase after=src \
        --program bench/lapack_width.c --link=-lopenblas --args "200 5" --rounds 5
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

_TIMING = re.compile(r"((?:\d+ x )?[A-Za-z][\w ]*?)\s+(\d+(?:\.\d+)?) ms")


def build(label: str, src: str, program: str, link: list[str], level: str, out: Path) -> Path:
    exe = out / f"{Path(program).stem}_{label}"
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve()), "PYTHONPYCACHEPREFIX": str(out / f"pyc_{label}")}
    subprocess.run(["zymase", "cc", level, program, "-o", str(exe), *link], check=True, env=env)
    return exe


def timings(exe: Path, args: list[str]) -> dict[str, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([str(exe), *args], check=True, capture_output=True, text=True, env=env).stdout
    found = {}
    for line in out.splitlines():
        head = line.split("n=")[0].strip() if "n=" in line else ""
        for label, ms in _TIMING.findall(line.split("n=", 1)[-1] if head else ""):
            found[f"{head} | {label.strip()}"] = float(ms)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zymase", action="append", required=True, metavar="LABEL=SRC",
                    help="a zymase source tree (repeatable; the first is the reference)")
    ap.add_argument("--program", required=True)
    ap.add_argument("--link", default="", help="linker flags, one string (--link=-lopenblas)")
    ap.add_argument("--level", default="-O2")
    ap.add_argument("--args", default="", help="the program's arguments, one string")
    ap.add_argument("--rounds", type=int, default=5)
    opts = ap.parse_args()
    trees = [z.split("=", 1) for z in opts.zymase]
    link, args = opts.link.split(), opts.args.split()
    with tempfile.TemporaryDirectory() as tmp:
        exes = {label: build(label, src, opts.program, link, opts.level, Path(tmp)) for label, src in trees}
        runs: dict[str, list[dict[str, float]]] = {label: [] for label, _ in trees}
        for _ in range(opts.rounds):
            for label, _ in trees:
                runs[label].append(timings(exes[label], args))
    ref = trees[0][0]
    print(f"{opts.program} {opts.args}, {opts.rounds} rounds; ratios against '{ref}'")
    for key in runs[ref][0]:
        cells = [f"{label} {min(r[key] for r in runs[label]):9.3f} ms" for label, _ in trees]
        for label, _ in trees[1:]:
            ratios = [b[key] / a[key] for a, b in zip(runs[ref], runs[label]) if a[key] > 0]
            lo = min(r[key] for r in runs[label]) / min(r[key] for r in runs[ref])
            cells.append(f"{label}/{ref} minima {lo:.2f} median {statistics.median(ratios):.2f}")
        print(f"  {key:34s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
