"""Enzyme's split reverse mode, return markers and registered custom derivatives from C
(issue 24 items 1 and 2): the self-checking programs in tests/c/split_mode and
tests/c/custom_derivatives, built at -O0..-O3 (all six builds with ZYMASE_TEST_ALL_LEVELS=1), the run-time check of
a caller's tape buffer, and the errors for registered functions that do not follow
Enzyme's convention."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from c_harness import build_and_run, builds
from forking_cli import run_cli

_C = Path(__file__).resolve().parent / "c"
PROGRAMS = sorted([*(_C / "split_mode").glob("*.c"), *(_C / "custom_derivatives").glob("*.c")])
# -O0..-O3 in the default suite (issue 24), all six with ZYMASE_TEST_ALL_LEVELS=1
LEVELS = builds("-O0", "-O1", "-O2", "-O3")


def test_corpus_is_there():
    assert len(PROGRAMS) >= 7


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_split_and_custom_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


def test_tape_buffer_too_small_at_run_time(tmp_path: Path):
    # the buffer's size is known only at run time: the program stops with the reason
    (tmp_path / "small.c").write_text(
        "#include <stdlib.h>\n"
        "extern int enzyme_dup, enzyme_allocated, enzyme_tape;\n"
        "extern void __enzyme_augmentfwd(void*, ...);\n"
        "void f(double *x) { x[0] = x[0] * x[0]; }\n"
        "int main(int argc, char **argv) { double x = 2, dx = 1; int size = 8 * argc;\n"
        "  void *tape = malloc(size);\n"
        "  __enzyme_augmentfwd((void*)f, enzyme_allocated, size, enzyme_tape, tape, enzyme_dup, &x, &dx);\n"
        "  free(tape); return 0; }\n")
    proc = run_cli(["cc", "-O2", "small.c", "-o", "small"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = subprocess.run([str(tmp_path / "small")], capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0
    assert "tape buffer given to __enzyme_augmentfwd" in ran.stderr
    assert "smaller than the 24 bytes" in ran.stderr
    ok = subprocess.run([str(tmp_path / "small"), "a", "b"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
def test_registered_gradient_of_a_library_function(flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    # the registered function is only declared where it is differentiated
    here = _C / "custom_derivatives" / "external"
    build_and_run(here / "registered_gradient_external.c", flags, tmp_path, zymase_cli,
                  other_sources=[here / "library.c"])
