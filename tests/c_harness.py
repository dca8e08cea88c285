"""Building and running the self-checking C programs (tests/c, tests/c/memory).

Each program calls Enzyme's C ABI, compares every derivative with a closed form,
prints one line per check (``ok ...`` / ``FAIL ...``) and exits nonzero on any
failure. A build passes when ``zymase cc`` builds it and the program exits with 0.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from forking_cli import run_cli

# -O0..-O3; -O2 -ffast-math (the pre-AD pipeline then rewrites libm calls and
# arithmetic much more freely); -O2 --no-preopt (AD of the unoptimized IR, every local
# in memory, optimized afterwards).
ALL_BUILDS = [[f"-O{n}"] for n in range(4)] + [["-O2", "-ffast-math"], ["-O2", "--no-preopt"]]
# The default suite skips -O1, to stay near 10 minutes on 2 cores: -O1 sits between -O0
# and -O2, which bracket it, and -O3 stresses loops and memory more. The fuzz sample and
# the level-parametrized tests in tests/python still build at -O1. ZYMASE_TEST_ALL_LEVELS=1
# builds the C corpora at all six (tests/c/README.md).
ALL_LEVELS = os.environ.get("ZYMASE_TEST_ALL_LEVELS") == "1"
BUILDS = ALL_BUILDS if ALL_LEVELS else [b for b in ALL_BUILDS if b != ["-O1"]]
BUILD_IDS = ["".join(f.lstrip("-") for f in b) for b in BUILDS]


def builds(*default: str) -> list[list[str]]:
    """The builds of a corpus: ``default`` (levels such as "-O0", "-O2 -ffast-math") in the
    default suite, all six with ZYMASE_TEST_ALL_LEVELS=1."""
    return ALL_BUILDS if ALL_LEVELS else [level.split() for level in default]


def build_ids(configs: list[list[str]]) -> list[str]:
    return ["".join(f.lstrip("-") for f in b) for b in configs]


def sampled_builds(programs: list, always: tuple[str, ...], rotating: tuple[str, ...],
                   every: int = 1) -> list[tuple]:
    """(program, flags) for a corpus: every program at each level of ``always``, plus, for
    one program in ``every`` (by a stable hash of its name), one level of ``rotating``
    chosen by the same hash, so that the corpus as a whole goes through every level at a
    fraction of the cost (a fixed sample: the same builds in every run). With
    ZYMASE_TEST_ALL_LEVELS=1 every program at all six."""
    import zlib

    if ALL_LEVELS:
        return [(p, b) for p in programs for b in ALL_BUILDS]
    cases = []
    for p in programs:
        h = zlib.crc32(Path(p).stem.encode())
        extra = rotating[(h // every) % len(rotating)] if rotating and h % every == 0 else None
        for level in (*always, *([extra] if extra else [])):
            cases.append((p, level.split()))
    return cases


def case_ids(cases: list[tuple]) -> list[str]:
    return [f"{Path(p).stem}-{build_ids([b])[0]}" for p, b in cases]

COMPILE_TIMEOUT = 300
RUN_TIMEOUT = 120


def _tail(text: str, lines: int = 60) -> str:
    rows = text.splitlines()
    if len(rows) <= lines:
        return text
    return "\n".join([f"... ({len(rows) - lines} lines cut)"] + rows[-lines:])


def build_and_run(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str],
                  other_sources: tuple[Path, ...] = ()) -> None:
    """Build ``program`` (and ``other_sources``, translation units linked with it) with
    ``zymase cc <flags>`` and run it; assert both succeed."""
    exe = tmp_path / program.stem
    level = " ".join(flags)
    build = run_cli(["cc", *flags, str(program), *map(str, other_sources), "-o", str(exe)],
                    timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 0 and exe.is_file(), (
        f"`zymase cc {level} {program.name}` failed with exit code {build.returncode}\n"
        f"--- stderr ---\n{_tail(build.stderr)}\n--- stdout ---\n{_tail(build.stdout)}"
    )
    run = subprocess.run(
        [str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL, cwd=tmp_path
    )
    failed = [line for line in run.stdout.splitlines() if line.startswith("FAIL")]
    assert run.returncode == 0, (
        f"{program.name} built with {level} exited with {run.returncode}"
        f" ({len(failed)} failed check(s))\n"
        + ("--- failed checks ---\n" + _tail("\n".join(failed), 40) + "\n" if failed else "")
        + f"--- output ---\n{_tail(run.stdout)}\n--- stderr ---\n{_tail(run.stderr)}"
    )


def emit_llvm(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]) -> str:
    """The LLVM IR ``zymase cc <flags> -S -emit-llvm`` writes for ``program``."""
    ll = tmp_path / f"{program.stem}.ll"
    build = run_cli(["cc", *flags, "-S", "-emit-llvm", str(program), "-o", str(ll)],
                    timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 0, f"--- stderr ---\n{_tail(build.stderr)}"
    return ll.read_text()


def function_ir(ll: str, name: str) -> str:
    """The definition of function ``@name`` in the LLVM IR text ``ll``, header to ``}``."""
    match = re.search(rf"^define [^\n]*@{re.escape(name)}\(.*?^}}", ll, re.M | re.S)
    assert match, f"no definition of @{name}"
    return match.group(0)
