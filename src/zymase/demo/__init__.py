"""``zymase demo``: the classic examples, compiled from C by zymase's own pipeline."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent

EXAMPLES = [
    ("relu3.c", "relu3(x) = x > 0 ? x^3 : 0 -- the synthesized derivative beside 3x^2"),
    ("gradient.c", "a four-input function -- gradient beside finite differences, with timings"),
]


def run_demo() -> int:
    from zymase.frontends.c import Timings, build

    status = 0
    with tempfile.TemporaryDirectory(prefix="zymase-demo-") as tmp:
        for name, title in EXAMPLES:
            print(f"== {name}: {title}")
            print(f"   (zymase cc -O2 {name}: clang -> pre-AD O2 -> zymase AD -> O2 -> native)\n")
            exe = str(Path(tmp) / Path(name).stem)
            t = Timings()
            build([str(HERE / name)], exe, [], [], 2, t)
            sys.stdout.flush()
            rc = subprocess.call([exe])
            print(f"\n   compiled in {sum(t.phases.values()):.2f} s; exit code {rc}\n")
            status |= rc
    return status
