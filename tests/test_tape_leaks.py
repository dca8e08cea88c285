"""Memory safety of derivatives under valgrind: the tape and the shadow allocations are
freed when the gradient returns (no definite leaks), and the reverse sweep never reads
freed or uninitialized memory. Programs that allocate, free, reallocate, recurse over
memory and loop long enough for the tape to move from its stack buffer to the heap."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from forking_cli import run_cli

MEMORY = Path(__file__).resolve().parent / "c" / "memory"
PROGRAMS = ["heat1d_swap", "linked_list", "calloc_realloc", "malloc_temps", "mergesort_rec", "tape_recurrence"]


def test_valgrind_is_installed():
    assert shutil.which("valgrind"), "valgrind is needed for these tests (apt-get install -y valgrind)"


@pytest.mark.parametrize("level", ["-O0", "-O2"])
@pytest.mark.parametrize("name", PROGRAMS)
def test_no_leaks_no_invalid_accesses(name, level, tmp_path, zymase_cli):
    exe = tmp_path / name
    build = run_cli(["cc", level, "-g", str(MEMORY / f"{name}.c"), "-o", str(exe)],
                    timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(
        ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99", str(exe)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert "definitely lost: 0 bytes" in run.stderr or "All heap blocks were freed" in run.stderr, run.stderr[-2000:]
