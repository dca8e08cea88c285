"""The self-checking C programs in tests/c/memory, built with ``zymase cc`` at -O0 .. -O3.

These programs differentiate memory the way Enzyme users write it: ``enzyme_dup`` /
``enzyme_dupnoneed`` / ``enzyme_const`` pointer arguments, *out parameters with seeded
shadows, malloc'd temporaries, loops that overwrite memory, structs, recursion
(see tests/c/memory/README.md). Each one compares every derivative with a closed form,
prints one line per check and exits nonzero on any failure. A test passes when
``zymase cc`` builds the program and the program exits with 0.

Every program is built at -O0, -O1, -O2, -O3 and -O2 -ffast-math.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

MEMORY_PROGRAMS_DIR = Path(__file__).resolve().parent / "c" / "memory"
ALL_PROGRAMS = sorted(MEMORY_PROGRAMS_DIR.glob("*.c"))


PROGRAMS = ALL_PROGRAMS
LEVELS = [0, 1, 2, 3]
# Builds: plain -O0..-O3, plus -O2 -ffast-math (reassociation, no NaN/inf/errno).
# ... and -O2 --no-preopt: AD of the unoptimized IR (every local in memory), optimized after.
BUILDS = [[f"-O{n}"] for n in LEVELS] + [["-O2", "-ffast-math"], ["-O2", "--no-preopt"]]

COMPILE_TIMEOUT = 300
RUN_TIMEOUT = 120


def _tail(text: str, lines: int = 60) -> str:
    rows = text.splitlines()
    if len(rows) <= lines:
        return text
    return "\n".join([f"... ({len(rows) - lines} lines cut)"] + rows[-lines:])


def test_memory_corpus_is_there():
    assert len(ALL_PROGRAMS) >= 40, f"expected at least 40 programs in {MEMORY_PROGRAMS_DIR}"


def _build_and_run(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    exe = tmp_path / program.stem
    level = " ".join(flags)
    build = subprocess.run(
        [*zymase_cli, "cc", *flags, str(program), "-o", str(exe)],
        capture_output=True,
        text=True,
        timeout=COMPILE_TIMEOUT,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    assert build.returncode == 0 and exe.is_file(), (
        f"`zymase cc {level} {program.name}` failed with exit code {build.returncode}\n"
        f"--- stderr ---\n{_tail(build.stderr)}\n--- stdout ---\n{_tail(build.stdout)}"
    )

    run = subprocess.run(
        [str(exe)],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    failed = [line for line in run.stdout.splitlines() if line.startswith("FAIL")]
    assert run.returncode == 0, (
        f"{program.name} built with {level} exited with {run.returncode}"
        f" ({len(failed)} failed check(s))\n"
        + ("--- failed checks ---\n" + _tail("\n".join(failed), 40) + "\n" if failed else "")
        + f"--- output ---\n{_tail(run.stdout)}\n--- stderr ---\n{_tail(run.stderr)}"
    )


test_c_memory_program = pytest.mark.parametrize(
    "flags", BUILDS, ids=["".join(f.lstrip("-") for f in b) for b in BUILDS]
)(pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])(_build_and_run))
