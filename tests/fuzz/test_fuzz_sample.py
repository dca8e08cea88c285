"""A fixed-seed fuzz sample for CI: C_COUNT generated C programs and NJIT_COUNT generated
njit functions, each checked reverse vs forward vs central finite differences
(issue 23, "no silent wrong answer": every derivative is right or refused), and a few
generated JAX functions (JAX_SEEDS) checked against jax.grad / jax.jvp (run when JAX is
installed; XLA's compile time makes each cost about a second of CPU).

To keep the default suite short (64 C and 12 njit programs took 126 s and 68 s wall on 2
idle cores inside the full suite, which then ran 21 minutes; now 32 and 6), each C program
is built once, at one level that rotates with the seed over -O0..-O3 and -O2 -ffast-math,
and one C program in VALGRIND_EVERY also runs under valgrind. Long campaigns:
``python -m tests.fuzz``.

The sample excludes only the generator features listed in KNOWN_BROKEN_C /
KNOWN_BROKEN_NJIT, each with the issue item of the engine bug it exposes; remove an
entry once the bug is fixed (and the sample will exercise the feature again).
"""

from __future__ import annotations

from collections import Counter

import pytest
from concurrent.futures import ThreadPoolExecutor

from .check_c import CXX_FLAGS, LEVELS, check_c_source
from .gen_c import C_FEATURES, LATER_FEATURES, NEWEST_FEATURES, generate_c
from .gen_cmem import CMEM_FEATURES, cmem_program, generate_cmem
from .gen_cxx import generate_cxx
from .gen_jax import JAX_FEATURES, generate_jax
from .gen_njit import LATER_NJIT_FEATURES, NEWEST_NJIT_FEATURES, NJIT_FEATURES, generate_njit

# (16 programs, each of the five levels three or four times: a fixed sample sized for
# the suite's time; campaigns: python -m tests.fuzz)
C_SEEDS = range(100_000, 100_016)
NJIT_SEEDS = range(200_000, 200_004)
# 300323 (float32): a counted while_loop, a reversed scan over a matmul of a pad, einsum,
# concatenate, arctan2/hypot/power (whose jvp XLA miscompiles at optimization level 0,
# JAX's and zymase's alike: check_jax.CONFIRM_XLA_OPTIONS);
# 300104 (float64): a scan with a cond in its body, erf, an outer einsum, a fori_loop
# whose body runs a scan (about 4 s CPU each)
JAX_SEEDS = (300323, 300104)
VALGRIND_EVERY = 16
JOBS = 2

# feature -> the engine bug that makes generated programs using it fail today
KNOWN_BROKEN_C: dict[str, str] = {
}
KNOWN_BROKEN_NJIT: dict[str, str] = {}
KNOWN_BROKEN_JAX: dict[str, str] = {}

# the generator's newest constructs (NEWEST_FEATURES: 2-D stack arrays, structs of arrays,
# searches) only in campaigns: every sample program is the one it was before they existed
C_SAMPLE_FEATURES = set(C_FEATURES) - set(KNOWN_BROKEN_C) - set(NEWEST_FEATURES)
# The generator's later constructs (views returned by value, chosen by a ternary or from an
# array of views, backward walks with negative offsets, loops left by break, calls through
# function pointers) in three programs of the sample (100000: a view written through;
# 100013: a view and a break; 100014: a backward walk and a function pointer), the others
# as they were before those constructs existed (campaigns: python -m tests.fuzz)
LATER_SEEDS = (100000, 100013, 100014)


def c_sample_features(seed: int) -> set[str]:
    return C_SAMPLE_FEATURES if seed in LATER_SEEDS else C_SAMPLE_FEATURES - set(LATER_FEATURES)

# the njit generator's later constructs (LATER_NJIT_FEATURES: 2-D temporaries, tuples,
# searches, output arguments, more NumPy) only in campaigns: the sample's programs are the
# ones they were before those constructs existed
NJIT_SAMPLE_FEATURES = (set(NJIT_FEATURES) - set(KNOWN_BROKEN_NJIT) - set(LATER_NJIT_FEATURES)
                        - set(NEWEST_NJIT_FEATURES))
JAX_SAMPLE_FEATURES = set(JAX_FEATURES) - set(KNOWN_BROKEN_JAX)
LEVEL_ROTATION = list(LEVELS)


# --lang c-mem (gen_cmem.py, session 31): active doubles moved through memory at run-time
# offsets and lengths; four programs that together write every construct of CMEM_FEATURES
# and every helper (vec_insert/vec_erase, shift_right, copy_window, copy_bytes, at_byte),
# each at one level, -O1 among them (about 5 s of CPU)
CMEM_SAMPLE = ((970153, "O1"), (970022, "O2"), (970114, "O3"), (970253, "O0"))
# --lang c++-stl (gen_cxx.py): one program at -O1 (transform with a lambda, erase(remove_if),
# resize, assign, a range insert that reallocates, erase of a range; about 3 s of CPU)
CXX_SAMPLE = (971047, "O1")


def _c_case(seed: int):
    level = LEVEL_ROTATION[seed % len(LEVEL_ROTATION)]
    text = generate_c(seed, c_sample_features(seed))
    outcomes = [check_c_source(text, level)]
    if seed % VALGRIND_EVERY == 0 and outcomes[0].kind == "right":
        outcomes.append(check_c_source(text, level, valgrind=True))
    return seed, outcomes


def _report(results) -> tuple[Counter, list[str]]:
    counts, bad = Counter(), []
    for seed, outcomes in results:
        for o in outcomes:
            counts[o.kind] += 1
            # "invalid" (the generated primal overflowed) is a generator defect, counted
            # and printed but not an engine failure
            if o.kind not in ("right", "refused", "invalid"):
                bad.append(f"seed {seed} {o.level}{' valgrind' if o.valgrind else ''}: {o.kind}: {o.detail[:400]}")
    return counts, bad


def test_c_fuzz_sample():
    with ThreadPoolExecutor(JOBS) as ex:
        results = list(ex.map(_c_case, C_SEEDS))
    counts, bad = _report(results)
    print(f"C fuzz sample: {dict(counts)}")
    assert not bad, (f"{len(bad)} of {len(C_SEEDS)} generated C programs failed "
                     "(reproduce: python -m tests.fuzz show SEED > p.c; zymase cc -OLEVEL p.c):\n" + "\n".join(bad))


def test_c_mem_fuzz_sample():
    def one(case):
        seed, level = case
        return seed, [check_c_source(generate_cmem(seed), level)]

    with ThreadPoolExecutor(JOBS) as ex:
        results = list(ex.map(one, CMEM_SAMPLE))
    counts, bad = _report(results)
    print(f"C memory-idiom fuzz sample: {dict(counts)}")
    assert not bad, (f"{len(bad)} of {len(CMEM_SAMPLE)} generated C programs failed "
                     "(reproduce: python -m tests.fuzz show SEED --lang c-mem > p.c; zymase cc -OLEVEL p.c):\n"
                     + "\n".join(bad))


def test_cxx_stl_fuzz_sample():
    seed, level = CXX_SAMPLE
    counts, bad = _report([(seed, [check_c_source(generate_cxx(seed), level, extra=CXX_FLAGS)])])
    assert not bad, ("the generated C++ program failed (reproduce: python -m tests.fuzz show SEED --lang c++-stl "
                     "> p.cpp; zymase c++ -OLEVEL p.cpp):\n" + "\n".join(bad))
    assert counts["right"] == 1, f"the C++ sample should be differentiated, not refused: {dict(counts)}"


def test_c_mem_sample_covers_every_construct():
    """The sample's seeds still write every memory construct (a generator change that moves
    them shows here, not as a silently thinner sample)."""
    used, helpers = set(), set()
    for seed, _ in CMEM_SAMPLE:
        prog = cmem_program(seed)
        used |= set(prog.used)
        helpers |= prog.made
    assert used >= set(CMEM_FEATURES), f"not written by the sample: {sorted(set(CMEM_FEATURES) - used)}"
    assert helpers >= {"vec", "rec", "shift_right", "copy_window", "copy_bytes", "at_byte"}, sorted(helpers)


def test_njit_fuzz_sample():
    from .check_njit import check_njit_source

    results = [(s, [check_njit_source(generate_njit(s, NJIT_SAMPLE_FEATURES))]) for s in NJIT_SEEDS]
    counts, bad = _report(results)
    print(f"njit fuzz sample: {dict(counts)}")
    assert not bad, f"{len(bad)} of {len(NJIT_SEEDS)} generated njit functions failed:\n" + "\n".join(bad)


def test_jax_fuzz_sample():
    pytest.importorskip("jax")
    from .check_jax import check_jax_source

    results = [(s, [check_jax_source(generate_jax(s, JAX_SAMPLE_FEATURES))]) for s in JAX_SEEDS]
    counts, bad = _report(results)
    print(f"JAX fuzz sample: {dict(counts)}")
    assert counts["right"] == len(JAX_SEEDS), f"the JAX sample should be differentiated, not refused: {dict(counts)}"
    assert not bad, (f"{len(bad)} of {len(JAX_SEEDS)} generated JAX functions failed "
                     "(reproduce: python -m tests.fuzz show SEED --lang jax):\n" + "\n".join(bad))


def test_generated_c_is_warning_free():
    """The generator's promise (no warnings under clang -Wall) on the whole sample."""
    from .check_c import clang_clean

    dirty = [s for s in C_SEEDS if not clang_clean(generate_c(s, c_sample_features(s)))]
    assert not dirty, f"clang -Wall -Werror rejects the programs of seeds {dirty}"
