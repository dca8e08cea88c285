"""Nested differentiation from C (issue 25 item 1): derivatives of functions that
themselves call __enzyme_autodiff / __enzyme_fwddiff, in every combination of modes and
four deep, built at -O0..-O3 and -O2 -ffast-math (tests/c/nested)."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run

PROGRAMS = sorted((Path(__file__).resolve().parent / "c" / "nested").glob("*.c"))
LEVELS = [["-O0"], ["-O1"], ["-O2"], ["-O3"], ["-O2", "-ffast-math"]]


def test_corpus_is_there():
    assert len(PROGRAMS) >= 3


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_nested_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)
