"""CPU time of the private copy (``zymase.stats()``'s ``numba`` phase) and of the whole
first ``zymase.grad`` call, for two njit functions that need the same Numba
``@overload`` implementations (slice assignment, ``np.zeros``, ``np.sum``), one after
the other in a fresh process (issue 29: the first grad call, and the Numba tests, which
compile many kernels per process).

The first kernel shows what the copy costs on its own; the second what is left when the
copies share their overload implementations. Each zymase source tree given with
``--zymase label=src`` runs in its own processes, rounds alternating. Run from the
repository root:

  python bench/numba_copy_reuse.py --zymase before=/work/main/src --zymase after=src --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def child() -> None:
    import math
    import time
    import types

    import numba
    import numpy as np

    @numba.njit
    def rows(x):
        m = np.zeros((x.shape[0], x.shape[0]))
        for i in range(x.shape[0]):
            m[i, :] = x * x[i] + math.sin(x[i])
        return np.sum(m * m)

    @numba.njit
    def scaled_rows(x, a):
        m = np.zeros((x.shape[0], x.shape[0]))
        for i in range(x.shape[0]):
            m[i, :] = a * x + math.cos(x[i])
        return np.sum(m * m)

    x = np.linspace(0.1, 0.9, 5)
    rows(x), scaled_rows(x, 0.5)  # the user's own compiles come first
    import zymase
    import zymase.frontends.numba
    import zymase.frontends.numba_copy

    cpu = types.SimpleNamespace(perf_counter=time.process_time)  # the phases in CPU seconds
    zymase.frontends.numba_copy.time = cpu
    out = {}
    for name, f, args in (("first", rows, (x,)), ("second", scaled_rows, (x, 0.5))):
        c = time.process_time()
        zymase.grad(f, 0, cache=False)(*args)
        out[name] = time.process_time() - c
        out[name + " copy"] = zymase.stats()[-1].phases["numba"]
    print(json.dumps(out))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zymase", action="append", metavar="LABEL=SRC", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child()
        return 0
    variants = [v.split("=", 1) for v in a.zymase]
    rows: dict = {label: [] for label, _ in variants}
    def run(label: str, src: str, tmp: str) -> dict:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(src), ZYMASE_CACHE_DIR=tmp, NUMBA_NUM_THREADS="1",
                   PYTHONPYCACHEPREFIX=os.path.join(tmp, f"pyc-{label}"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode compiled once, as an installed package's
        proc = subprocess.run([sys.executable, __file__, "--child", "--zymase", "x=x"], env=env,
                              capture_output=True, text=True, timeout=900, check=True)
        return json.loads(proc.stdout.strip().splitlines()[-1])

    with tempfile.TemporaryDirectory() as tmp:
        for label, src in variants:  # warm-up (bytecode, the tape runtime's parse): not measured
            run(label, src, tmp)
        for r in range(a.rounds):
            for label, src in variants if r % 2 == 0 else variants[::-1]:
                rows[label].append(run(label, src, tmp))
                print(f"round {r + 1} {label}: {rows[label][-1]}", file=sys.stderr, flush=True)
    print(f"medians of {a.rounds} rounds, CPU seconds (shared machine: compare ratios)\n")
    print("| variant | first grad | its copy | second grad | its copy |")
    print("|---|---|---|---|---|")
    for label, _ in variants:
        med = {k: statistics.median(row[k] for row in rows[label]) for k in rows[label][0]}
        print(f"| {label} | {med['first']:.2f} | {med['first copy']:.2f} | {med['second']:.2f} | "
              f"{med['second copy']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
