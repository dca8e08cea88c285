"""The C++ interface header ``<enzyme/enzyme>`` shipped in src/zymase/include (issue 24
item 4): the self-checking C++ programs in tests/cxx_header, built with ``zymase cc``
at several levels, and the compile-time refusals of what the header does not offer."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import ALL_LEVELS, build_and_run, builds

CXX_HEADER_DIR = Path(__file__).resolve().parent / "cxx_header"


def test_marker_declarations_with_mangled_names_take_nomerge():
    """C++ declares the marker functions as templates (``template <class R, class...
    T> R __enzyme_autodiff(void *, T...)``), whose mangled names do not start with
    ``__enzyme_``; marking them ``nomerge`` crashed zymase (issue 24 item 4)."""
    from zymase.llvm.pre_ad_marks import protect_marker_calls

    ir = (
        "declare { double, double } @_Z17__enzyme_autodiffI2R2JPiddEET_PvDpT0_(ptr noundef, ptr noundef, double)\n"
        "declare double @_ZN6enzyme6detail16__enzyme_fwddiffIdJdEEET_PvDpT0_(ptr noundef, double) #4\n"
        "declare noundef double @__enzyme_autodiff(ptr noundef, ...) local_unnamed_addr #1\n"
    )
    lines = protect_marker_calls(ir).splitlines()
    assert lines[0].endswith("(ptr noundef, ptr noundef, double) nomerge")
    assert lines[1].endswith("(ptr noundef, double) nomerge #4")
    assert lines[2].endswith("(ptr noundef, ...) local_unnamed_addr nomerge #1")


# The header's programs at -O0 and -O2 (every level and -O2 -ffast-math with
# ZYMASE_TEST_ALL_LEVELS=1): -O0 relies on clang inlining the header's always_inline
# functions, -O1..-O3 on the pre-AD pipeline doing it. (--no-preopt inlines nothing:
# refused, see the last test.)
PROGRAMS = sorted(CXX_HEADER_DIR.glob("*.cpp"))
LEVELS = builds("-O0", "-O2") if not ALL_LEVELS else [["-O0"], ["-O1"], ["-O2"], ["-O3"], ["-O2", "-ffast-math"]]


def test_programs_are_there():
    assert {p.stem for p in PROGRAMS} >= {"reverse", "forward"}


@pytest.mark.parametrize("flags", LEVELS, ids=["".join(f.lstrip("-") for f in b) for b in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_header_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


# What the header does not offer fails to compile, with a message naming it (the first
# line of each file: `// expect-error: <text>`), never with a traceback.
REFUSED = sorted((CXX_HEADER_DIR / "refused").glob("*.c*"))


def _expected_error(source: Path) -> str:
    first = source.read_text().splitlines()[0]
    assert first.startswith("// expect-error: "), f"{source.name}: first line must say the expected error"
    return first.removeprefix("// expect-error: ")


@pytest.mark.parametrize("source", REFUSED, ids=[p.name for p in REFUSED])
def test_header_refuses_at_compile_time(source: Path, tmp_path: Path):
    from forking_cli import run_cli

    exe = tmp_path / "refused"
    build = run_cli(["cc", "-O0", str(source), "-o", str(exe)], timeout=120, cwd=tmp_path)
    assert build.returncode != 0 and not exe.exists()
    assert _expected_error(source) in build.stderr, build.stderr
    assert "Traceback" not in build.stderr and "internal error" not in build.stderr


def test_header_ships_with_the_package():
    """The header is package data (pyproject's `include/**/*`), found where `zymase cc`
    looks for it."""
    from importlib.resources import files

    from zymase.llvm.toolchain import INCLUDE_DIR

    header = files("zymase") / "include" / "enzyme" / "enzyme"
    assert header.is_file()
    assert (Path(INCLUDE_DIR) / "enzyme" / "enzyme").is_file()
    assert "enzyme::autodiff" in header.read_text()


def test_header_without_preopt_is_refused_with_a_hint(tmp_path: Path):
    """`--no-preopt` differentiates the IR before anything is inlined, so the marker call
    stays inside the header's function, where f is a parameter: refused, with a hint
    that names the cause instead of "pass the function itself" (issue 24 item 4)."""
    from forking_cli import run_cli

    exe = tmp_path / "reverse"
    build = run_cli(["cc", "-O2", "--no-preopt", str(CXX_HEADER_DIR / "reverse.cpp"), "-o", str(exe)],
                    timeout=120, cwd=tmp_path)
    assert build.returncode != 0 and not exe.exists()
    assert build.stderr.startswith("zymase: error:") and len(build.stderr.strip().splitlines()) == 1, build.stderr
    assert "<enzyme/enzyme>" in build.stderr and "--no-preopt" in build.stderr, build.stderr
