"""zymase-opt prints upstream MLIR syntax: its output re-parses in xDSL (with the
dialects zymase registers) and prints back identically, after every kind of pass:
differentiation, cleanups, activity canonicalization, lowering to llvm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from zymase.ir import parse_mlir, print_mlir
from zymase.transforms.pipeline import run_passes

HERE = Path(__file__).parent

PIPELINES = [
    "",
    "enzyme",
    "enzyme,remove-unnecessary-enzyme-ops,canonicalize,cse",
    "enzyme-activity-opt,enzyme",
    "enzyme,lower-to-llvm",
]


def _inputs() -> dict[str, str]:
    files = {p.name: p.read_text() for p in sorted((HERE / "filecheck").glob("*.mlir")) if p.name != "errors.mlir"}
    # the memref programs of the AD tests (structured control flow, views, linalg)
    sys.path.insert(0, str(HERE))
    try:
        import test_memref_ad as ad
    finally:
        sys.path.pop(0)
    files["memref_set"] = ad.SET
    files["memref_programs"] = ad.SUMSQ
    return files


INPUTS = _inputs()


def _opt(text: str, passes: str) -> str:
    """What ``zymase-opt -p <passes>`` prints (the CLI writes run_passes' text)."""
    return run_passes(text, "<input>", [p for p in passes.split(",") if p])


def test_cli_prints_the_same_text():
    text = INPUTS["memref_set"]
    cmd = [sys.executable, "-c", "import sys; from zymase.cli import opt_main; sys.exit(opt_main())", "-", "-p", "enzyme"]
    proc = subprocess.run(cmd, input=text, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _opt(text, "enzyme")


@pytest.mark.parametrize("passes", PIPELINES, ids=[p or "parse-print" for p in PIPELINES])
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_output_reparses_and_prints_the_same(name, passes):
    out = _opt(INPUTS[name], passes)
    module = parse_mlir(out, f"{name} after {passes or 'nothing'}")
    module.verify()
    assert print_mlir(module) == out


def test_builtin_syntax_is_upstream():
    out = _opt(INPUTS["memref_programs"], "")
    # upstream spellings of builtin types/attributes and structured ops
    assert "memref<2x2xf64, strided<[?, 1], offset: ?>>" in out
    assert "affine_map<(d0, d1) -> (d0, d1)>" in out
    assert 'iterator_types = ["reduction", "reduction"]' in out
    assert "memref.copy %w, %tmp : memref<2x2xf64, strided<[?, 1], offset: ?>> to memref<2x2xf64>" in out
    assert "memref.cast %tmp : memref<2x2xf64> to memref<?x?xf64>" in out
    assert "#enzyme<activity enzyme_dup>" in out
