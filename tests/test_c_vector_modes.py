"""Vector (batched) modes from C (issue 25 item 2): ``__enzyme_fwddiff`` and
``__enzyme_autodiff`` with ``enzyme_width, N``, ``enzyme_dupv`` and
``enzyme_dupnoneedv``, checked lane by lane against N separate scalar calls and closed
forms (tests/c/vector: forward_width.c, reverse_width.c), built at -O0 and -O2 (all six
builds with ZYMASE_TEST_ALL_LEVELS=1). Malformed uses are refused by name in
tests/python/test_cli_errors.py (the width_* and dupv_* cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, build_ids, builds

PROGRAMS = sorted((Path(__file__).resolve().parent / "c" / "vector").glob("*.c"))
LEVELS = builds("-O0", "-O2")


@pytest.mark.parametrize("flags", LEVELS, ids=build_ids(LEVELS))
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_vector_mode_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)
