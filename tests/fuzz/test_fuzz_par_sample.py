"""A fixed-seed sample of the parallel fuzz modes for CI (issue 27, "no silent wrong
answer" for parallel derivatives): OMP_SEEDS generated OpenMP C programs, each built with
and without -fopenmp at one level (rotating over -O0 and -O2) and run at 1, 2 and 4
threads, and PRANGE_SEEDS generated prange functions at Numba threads 1, 2 and 4, each
against the serial program's derivative, forward mode and finite differences
(check_par.py). Sized for about 10 s of CPU time; campaigns:
``python -m tests.fuzz --lang c-omp`` / ``--lang njit-prange``."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .check_par import THREADS, check_omp_source
from .gen_par import generate_omp

OMP_SEEDS = (300_000, 300_001)
OMP_LEVELS = ("O0", "O2")
PRANGE_SEEDS = (400_000,)
REPO_ROOT = Path(__file__).resolve().parents[2]

_LIBOMP = (glob.glob("/usr/lib/llvm-*/lib/libomp.so") or glob.glob("/usr/lib/*/libomp.so")
           or glob.glob("/usr/lib/libomp.so"))


@pytest.mark.skipif(not _LIBOMP, reason="libomp is not installed (apt-get install libomp-19-dev)")
def test_omp_fuzz_sample():
    bad = []
    for k, seed in enumerate(OMP_SEEDS):
        level = OMP_LEVELS[k % len(OMP_LEVELS)]
        o = check_omp_source(generate_omp(seed), level)
        if o.kind not in ("right", "refused"):
            bad.append(f"seed {seed} {level}: {o.kind}: {o.detail[:400]}")
    assert not bad, ("generated OpenMP programs failed (reproduce: python -m tests.fuzz show SEED "
                     "--lang c-omp > p.c):\n" + "\n".join(bad))


def test_prange_fuzz_sample():
    # in a worker process: Numba's thread count is fixed when it is first imported, and the
    # sample needs 4 threads (the pytest process may have imported Numba with fewer)
    env = {**os.environ, "NUMBA_NUM_THREADS": str(max(THREADS)),
           "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "tests.fuzz.check_par", *map(str, PRANGE_SEEDS)], cwd=REPO_ROOT,
                         env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    records = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert len(records) == len(PRANGE_SEEDS), run.stderr[-3000:]
    bad = [f"seed {r['seed']}: {r['kind']}: {r['detail'][:400]}" for r in records if r["kind"] not in ("right", "refused")]
    assert not bad, "generated prange functions failed:\n" + "\n".join(bad)
