"""glibc's internal libm names, differentiated by their rules (issue 24 item 6): the
``*_finite`` entry points (``__exp_finite``, ``__powf_finite``, ...), ``__exp10`` and
``__sincos``, in every precision, built with every configuration of ``c_harness.BUILDS``.

This glibc does not let a program link against those names (the ``*_finite`` symbols are
compat-only, ``__exp10`` and ``__sincos`` are not exported), so tests/c/glibc_names/
glibc_names_defs.c defines them, as a second translation unit that ``zymase cc`` compiles
separately: the calls in libm_glibc_names.c stay calls to external functions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import BUILD_IDS, BUILDS, build_and_run

GLIBC_NAMES_DIR = Path(__file__).resolve().parent / "c" / "glibc_names"


@pytest.mark.parametrize("flags", BUILDS, ids=BUILD_IDS)
def test_glibc_internal_libm_names(flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(GLIBC_NAMES_DIR / "libm_glibc_names.c", flags, tmp_path, zymase_cli,
                  other_sources=(GLIBC_NAMES_DIR / "glibc_names_defs.c",))
