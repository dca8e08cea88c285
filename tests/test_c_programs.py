"""The scalar self-checking C programs in tests/c (see tests/c/README.md), each built at
-O0 and -O2, and every other one at one more configuration that rotates over them (-O3,
-O2 -ffast-math, -O2 --no-preopt; ``c_harness.sampled_builds``); all six with
ZYMASE_TEST_ALL_LEVELS=1."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, case_ids, sampled_builds

C_PROGRAMS_DIR = Path(__file__).resolve().parent / "c"
PROGRAMS = sorted(C_PROGRAMS_DIR.glob("*.c"))


def test_corpus_is_there():
    assert len(PROGRAMS) >= 28, f"expected at least 28 programs in {C_PROGRAMS_DIR}"


# the third configuration for every other program (the suite's time)
CASES = sampled_builds(PROGRAMS, ("-O0", "-O2"), ("-O3", "-O2 -ffast-math", "-O2 --no-preopt"), every=2)


@pytest.mark.parametrize(("program", "flags"), CASES, ids=case_ids(CASES))
def test_c_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)
