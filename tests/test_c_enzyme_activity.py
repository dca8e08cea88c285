"""Enzyme's activity annotations and allocators from C (issue 24 item 2, second half):
the self-checking programs tests/c/enzyme_interface/inactive_*.c, function_like_*.c
(each through the attribute and the registration-global spelling), metamalloc_*.c and
allocation_like.c, in reverse and forward mode, built at -O0..-O3 (and -O2 -ffast-math,
-O2 --no-preopt with ZYMASE_TEST_ALL_LEVELS=1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, build_ids, builds

PROGRAMS_DIR = Path(__file__).resolve().parent / "c" / "enzyme_interface"
PROGRAMS = sorted([*PROGRAMS_DIR.glob("inactive_*.c"), *PROGRAMS_DIR.glob("function_like_*.c"),
                   *PROGRAMS_DIR.glob("metamalloc_*.c"), *PROGRAMS_DIR.glob("allocation_like*.c")])
# -O0..-O3 in the default suite (issue 24 item 2), all six with ZYMASE_TEST_ALL_LEVELS=1
LEVELS = builds("-O0", "-O1", "-O2", "-O3")


def test_programs_are_there():
    assert {p.stem for p in PROGRAMS} >= {"inactive_attribute", "inactive_registered",
                                          "function_like_attribute", "function_like_registered",
                                          "inactive_global", "metamalloc_static", "allocation_like"}


@pytest.mark.parametrize("flags", LEVELS, ids=build_ids(LEVELS))
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_activity_annotation_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    # a program's other translation units, if any, are in parts/<program>_*.c
    build_and_run(program, flags, tmp_path, zymase_cli,
                  other_sources=tuple(sorted((PROGRAMS_DIR / "parts").glob(f"{program.stem}_*.c"))))
