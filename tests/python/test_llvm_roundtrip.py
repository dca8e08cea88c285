"""Round trips of real clang output through zymase.llvm.reader and zymase.llvm.writer.

* ``tests/llvm/*.c``: plain C programs (no ``__enzyme_*`` calls) compiled with
  ``clang -S -emit-llvm -O<n> -g`` for n = 0, 2, 3 (and -O2 without ``-g``) are read,
  written back and verified by LLVM; then both the original and the round-tripped IR
  are compiled and linked, and the two executables must print the same output and
  exit with the same status.
* ``tests/c/*.c`` and ``tests/c/memory/*.c`` (the AD test programs; they only link
  after differentiation) are read, written and verified (tests/c at -O0 and -O2, the
  memory programs at -O2), without execution (issue 23 item 3: every attribute and
  linkage form clang emits).

The C -> IR step runs for all programs up front, in parallel (clang is the slow part).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
import zlib
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from zymase.ir import location_of
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.writer import write_llvm_ir

TESTS = Path(__file__).resolve().parent.parent
PLAIN_PROGRAMS = sorted((TESTS / "llvm").glob("*.c"))
# every other program of tests/c and tests/c/memory, by a stable hash of its name (the
# corpus tests read and write every program's IR through zymase already; these add clang's
# raw IR with debug info; the suite's time)
AD_PROGRAMS = [p for p in sorted((TESTS / "c").glob("*.c")) + sorted((TESTS / "c" / "memory").glob("*.c"))
               if zlib.crc32(f"{p.parent.name}/{p.stem}".encode()) % 2 == 0]
# tests/c at -O0 or -O2, by turns (a stable hash of the name: both levels' constructs and
# attribute forms are covered across the corpus; -O1 and -O3 IR uses the same); the memory
# programs at -O2; for the suite's time
AD_CASES = [(src, level) for src in AD_PROGRAMS
            for level in ([(0, 2)[zlib.crc32(src.stem.encode()) % 2]] if src.parent.name == "c" else [2])]

# (opt level, with -g): -O0, -O2 and -O3 with debug info, and O2 once without
CONFIGS = [(0, True), (2, True), (3, True), (2, False)]


# ------------------------------------------------------------ toolchain glue


def _clang() -> list[str] | None:
    try:
        from zymase.llvm import toolchain

        return list(toolchain.find_clang().argv)
    except Exception:  # toolchain missing or no clang it likes: fall back to PATH
        for name in ("clang-19", "clang"):
            if path := shutil.which(name):
                return [path]
    return None


CLANG = _clang()
pytestmark = pytest.mark.skipif(CLANG is None, reason="no clang available")


def c_to_ir(source: Path, level: int, debug: bool, out: Path) -> str:
    argv = [*CLANG, "-S", "-emit-llvm", f"-O{level}", str(source), "-o", str(out)]
    if debug:
        argv.append("-g")
    if level == 0:
        argv += ["-Xclang", "-disable-O0-optnone"]
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    return out.read_text()


def build_executable(ll_text: str, exe: Path) -> None:
    """LLVM IR text -> executable (codegen by llvmlite: the IR may use LLVM 22 syntax
    that an older clang cannot parse)."""
    obj = exe.with_suffix(".o")
    try:
        from zymase.llvm import toolchain
    except ImportError:
        toolchain = None
    if toolchain is not None and hasattr(toolchain, "emit_object"):
        toolchain.emit_object(ll_text, obj, opt=0)
        toolchain.link([obj], exe)
        return
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(ll_text, llvm.create_context())
    machine = llvm.Target.from_default_triple().create_target_machine(reloc="pic", codemodel="default")
    obj.write_bytes(machine.emit_object(module))
    subprocess.run([shutil.which("cc") or CLANG[0], str(obj), "-o", str(exe), "-lm"], check=True)


def run(exe: Path) -> tuple[int, str]:
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout


def roundtrip(ll_text: str, filename: str) -> str:
    module = read_llvm_ir(ll_text, filename)
    module.verify()
    out = write_llvm_ir(module)
    llvm.parse_assembly(out, llvm.create_context()).verify()
    return out


# ------------------------------------------------------------------ fixtures


def _tag(source: Path, level: int, debug: bool) -> str:
    return f"{source.parent.name}_{source.stem}_O{level}{'g' if debug else ''}"


@pytest.fixture(scope="module")
def ir_files(tmp_path_factory) -> dict[str, Path]:
    """All C -> IR compilations of this file, done in parallel once."""
    work = tmp_path_factory.mktemp("llvm_roundtrip")
    jobs = [(src, level, debug) for src in PLAIN_PROGRAMS for level, debug in CONFIGS]
    # (every AD program at -O2 too: the nomerge test below reads them all)
    jobs += sorted({(src, level, True) for src, level in AD_CASES} | {(src, 2, True) for src in AD_PROGRAMS})
    paths = {_tag(*job): work / f"{_tag(*job)}.ll" for job in jobs}
    with ThreadPoolExecutor(max_workers=min(16, (os.cpu_count() or 2) * 2)) as pool:
        list(pool.map(lambda job: c_to_ir(job[0], job[1], job[2], paths[_tag(*job)]), jobs))
    return paths


# --------------------------------------------------------------------- tests


def test_there_are_plain_programs():
    assert len(PLAIN_PROGRAMS) >= 8


@pytest.mark.parametrize("level,debug", CONFIGS, ids=lambda v: str(v))
@pytest.mark.parametrize("source", PLAIN_PROGRAMS, ids=lambda p: p.stem)
def test_plain_program_roundtrip_runs_identically(ir_files, source, level, debug, tmp_path):
    ll_path = ir_files[_tag(source, level, debug)]
    original = ll_path.read_text()
    written = roundtrip(original, source.name)
    if debug:  # !dbg locations reach the ops
        module = read_llvm_ir(original, source.name)
        files = {loc.rsplit(":", 2)[0] for op in module.walk() if (loc := location_of(op))}
        assert any(f.endswith(source.name) for f in files), files
    build_executable(original, tmp_path / "original")
    build_executable(written, tmp_path / "roundtrip")
    expected = run(tmp_path / "original")
    assert expected[1], "the test program printed nothing"
    assert run(tmp_path / "roundtrip") == expected


@pytest.mark.skipif(not AD_PROGRAMS, reason="tests/c has no programs yet")
@pytest.mark.parametrize("source,level", AD_CASES, ids=lambda v: f"{v.parent.name}/{v.stem}" if isinstance(v, Path) else str(v))
def test_ad_program_roundtrip_verifies(ir_files, source, level):
    roundtrip(ir_files[_tag(source, level, True)].read_text(), source.name)


# -O2 only: clang marks the declarations alike at -O1..-O3, and a preopt run per program and level would double this file's time
@pytest.mark.parametrize("level", [2])
@pytest.mark.parametrize("source", AD_PROGRAMS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_ad_program_optimized_ir_takes_nomerge(ir_files, source, level):
    """`zymase opt -O2` on IR from clang -O1..-O3: the nomerge that keeps marker calls
    apart must land where LLVM accepts it, after `local_unnamed_addr` (issue 23 item 3)."""
    from zymase.llvm import toolchain
    from zymase.llvm.pre_ad_marks import protect_marker_calls

    text = protect_marker_calls(ir_files[_tag(source, level, True)].read_text())
    assert all("nomerge" in line for line in text.splitlines()
               if line.startswith("declare") and "@__enzyme_autodiff" in line)
    toolchain.preopt(text, level)
