"""Enzyme's activity annotations and allocators from C (issue 24 item 2, second half):
the self-checking programs tests/c/enzyme_interface/inactive_*.c, function_like_*.c
(each through the attribute and the registration-global spelling), metamalloc_*.c and
allocation_like.c,
in reverse and forward mode, built at -O0..-O3, -O2 -ffast-math and -O2 --no-preopt."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import ALL_BUILDS, build_and_run

PROGRAMS_DIR = Path(__file__).resolve().parent / "c" / "enzyme_interface"
PROGRAMS = sorted([*PROGRAMS_DIR.glob("inactive_*.c"), *PROGRAMS_DIR.glob("function_like_*.c"),
                   *PROGRAMS_DIR.glob("metamalloc_*.c"), *PROGRAMS_DIR.glob("allocation_like*.c")])
BUILD_IDS = ["".join(f.lstrip("-") for f in b) for b in ALL_BUILDS]


def test_programs_are_there():
    assert {p.stem for p in PROGRAMS} >= {"inactive_attribute", "inactive_registered",
                                          "function_like_attribute", "function_like_registered",
                                          "inactive_global", "metamalloc_static", "allocation_like"}


@pytest.mark.parametrize("flags", ALL_BUILDS, ids=BUILD_IDS)
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_activity_annotation_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    # a program's other translation units, if any, are in parts/<program>_*.c
    build_and_run(program, flags, tmp_path, zymase_cli,
                  other_sources=tuple(sorted((PROGRAMS_DIR / "parts").glob(f"{program.stem}_*.c"))))
