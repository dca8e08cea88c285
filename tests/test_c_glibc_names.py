"""glibc's internal libm names, differentiated by their rules (issue 24 item 6): the
``*_finite`` entry points (``__exp_finite``, ``__powf_finite``, ...), ``__exp10`` and
``__sincos``, in every precision, built at -O0, -O2 and -O2 -ffast-math (every configuration with ZYMASE_TEST_ALL_LEVELS=1).

This glibc does not let a program link against those names (the ``*_finite`` symbols are
compat-only, ``__exp10`` and ``__sincos`` are not exported), so tests/c/glibc_names/
glibc_names_defs.c defines them, as a second translation unit that ``zymase cc`` compiles
separately: the calls in libm_glibc_names.c stay calls to external functions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, build_ids, builds

GLIBC_NAMES_DIR = Path(__file__).resolve().parent / "c" / "glibc_names"


# -O0, -O2 and -O2 -ffast-math (where glibc's finite-math names appear); all six with
# ZYMASE_TEST_ALL_LEVELS=1 (the suite's time)
GLIBC_BUILDS = builds("-O0", "-O2", "-O2 -ffast-math")


@pytest.mark.parametrize("flags", GLIBC_BUILDS, ids=build_ids(GLIBC_BUILDS))
def test_glibc_internal_libm_names(flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(GLIBC_NAMES_DIR / "libm_glibc_names.c", flags, tmp_path, zymase_cli,
                  other_sources=(GLIBC_NAMES_DIR / "glibc_names_defs.c",))
