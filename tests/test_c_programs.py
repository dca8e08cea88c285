"""The scalar self-checking C programs in tests/c (see tests/c/README.md), each built
with every configuration of ``c_harness.BUILDS``."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import BUILD_IDS, BUILDS, build_and_run

C_PROGRAMS_DIR = Path(__file__).resolve().parent / "c"
PROGRAMS = sorted(C_PROGRAMS_DIR.glob("*.c"))


def test_corpus_is_there():
    assert len(PROGRAMS) >= 28, f"expected at least 28 programs in {C_PROGRAMS_DIR}"


@pytest.mark.parametrize("flags", BUILDS, ids=BUILD_IDS)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_c_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)
