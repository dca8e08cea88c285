"""The self-checking C programs in tests/c/memory, each built at -O0 and -O2, and every
third one also at -O3 or -O2 -ffast-math by turns (``c_harness.sampled_builds``; all six builds of
``c_harness.ALL_BUILDS`` with ZYMASE_TEST_ALL_LEVELS=1).

These programs differentiate memory the way Enzyme users write it: ``enzyme_dup`` /
``enzyme_dupnoneed`` / ``enzyme_const`` pointer arguments, *out parameters with seeded
shadows, malloc'd temporaries, loops that overwrite memory, structs, recursion
(see tests/c/memory/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, case_ids, sampled_builds

MEMORY_PROGRAMS_DIR = Path(__file__).resolve().parent / "c" / "memory"
# C, and C++ (.cpp: zymase cc compiles it as C++ and links libstdc++)
PROGRAMS = sorted([*MEMORY_PROGRAMS_DIR.glob("*.c"), *MEMORY_PROGRAMS_DIR.glob("*.cpp")])


def test_memory_corpus_is_there():
    assert len(PROGRAMS) >= 40, f"expected at least 40 programs in {MEMORY_PROGRAMS_DIR}"


# -O0 and -O2 for every program, and for every third program -O3 or -O2 -ffast-math by
# turns (c_harness.sampled_builds; the suite's time budget)
CASES = sampled_builds(PROGRAMS, ("-O0", "-O2"), ("-O3", "-O2 -ffast-math"), every=3)


@pytest.mark.parametrize(("program", "flags"), CASES, ids=case_ids(CASES))
def test_c_memory_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


def test_address_integers_in_locals_without_preopt(tmp_path: Path, zymase_cli: list[str]):
    # -O2 --no-preopt: the uintptr_t locals are stack slots with lifetime markers; their
    # loads are followed (compared, subtracted, tested for alignment), not refused (session 33)
    build_and_run(MEMORY_PROGRAMS_DIR / "address_integers_in_locals.c", ["-O2", "--no-preopt"], tmp_path, zymase_cli)
