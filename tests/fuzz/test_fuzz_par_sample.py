"""A fixed-seed sample of the parallel fuzz modes for CI (issue 27 item 4 of the fuzzing
brief, "no silent wrong answer" for parallel derivatives): OMP_SEEDS generated OpenMP C
programs, built with -fopenmp at their level and run at OMP_NUM_THREADS 1, 2 and 4
against each other, forward mode and finite differences, with the gradient repeated at 96
elements (a race's lost update changes it); and PRANGE_SEEDS small
generated prange functions at the Numba thread counts this process allows (1, 2 and 4
when NUMBA_NUM_THREADS permits), against each other, forward mode and finite differences
(check_par.py). Sized for about 10 s of CPU time (a C build with AD is about 3 s, a prange
function's Numba compiles several seconds), so the prange function has one loop and the
sample builds and compiles no serial twins; campaigns check everything:
``python -m tests.fuzz --lang c-omp`` / ``--lang njit-prange``."""

from __future__ import annotations

import glob

import pytest

from .check_par import SAMPLE_FEATURES, SAMPLE_SIZE, check_omp_source, check_prange_source
from .gen_par import generate_omp, generate_prange

# seed -> level: chunked and unchunked static schedules, reductions read by later regions,
# a loop nested in a parallel loop (with every adjoint add made plain, the engine's
# mutant, this program failed in about half of its runs: races are caught by chance)
OMP_SEEDS = {300_003: "O2"}
# a prange stencil (its adjoints scatter into neighbours: atomic adds)
PRANGE_SEEDS = (400_000,)

_LIBOMP = (glob.glob("/usr/lib/llvm-*/lib/libomp.so") or glob.glob("/usr/lib/*/libomp.so")
           or glob.glob("/usr/lib/libomp.so"))


@pytest.mark.skipif(not _LIBOMP, reason="libomp is not installed (apt-get install libomp-19-dev)")
def test_omp_fuzz_sample_matches_serial_at_1_2_4_threads():
    bad = []
    for seed, level in OMP_SEEDS.items():
        o = check_omp_source(generate_omp(seed), level, serial_twin=False)
        if o.kind not in ("right", "refused"):
            bad.append(f"seed {seed} {level}: {o.kind}: {o.detail[:400]}")
    assert not bad, ("generated OpenMP programs failed (reproduce: python -m tests.fuzz show SEED "
                     "--lang c-omp > p.c):\n" + "\n".join(bad))


def test_prange_fuzz_sample_agrees_across_thread_counts():
    bad = []
    for seed in PRANGE_SEEDS:
        o = check_prange_source(generate_prange(seed, SAMPLE_FEATURES, size=SAMPLE_SIZE), serial_twin=False)
        if o.kind not in ("right", "refused"):
            bad.append(f"seed {seed}: {o.kind}: {o.detail[:400]}")
    assert not bad, "generated prange functions failed:\n" + "\n".join(bad)
