"""Programs that work on the bits of floats (tests/c/float_bits/, conventions of
tests/c/README.md): sign-bit operations on the bits (xor, and, or, copysign by merging),
through memcpy, unions and helpers that return or take the bits as an integer, built at
-O0 and -O2 (every configuration but --no-preopt with ZYMASE_TEST_ALL_LEVELS=1). Without
the pre-AD pipeline the bits stay in stack slots, changed by integer loads and stores,
which the engine refuses with one error (session 34)."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, build_ids, builds
from forking_cli import run_cli

FLOAT_BITS_DIR = Path(__file__).resolve().parent / "c" / "float_bits"
PROGRAMS = sorted(FLOAT_BITS_DIR.glob("*.c"))
FLOAT_BITS_BUILDS = [b for b in builds("-O0", "-O2") if b != ["-O2", "--no-preopt"]]


@pytest.mark.parametrize("flags", FLOAT_BITS_BUILDS, ids=build_ids(FLOAT_BITS_BUILDS))
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_float_bits_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


def test_sign_bits_in_stack_slots_are_refused(tmp_path: Path):
    proc = run_cli(["cc", "-O2", "--no-preopt", str(FLOAT_BITS_DIR / "sign_bits.c"), "-o", str(tmp_path / "exe")],
                   cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("zymase: error:")]
    assert proc.returncode != 0 and len(errors) == 1, proc.stderr
    assert "sign_bits.c:" in errors[0] and "bits of a float" in errors[0], errors[0]
    assert "Traceback" not in proc.stderr
