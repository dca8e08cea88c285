"""Shared helpers for the MLIR tests (lowering structure and execution)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_SRC = Path(__file__).resolve().parents[2] / "src"
if str(_SRC) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(_SRC))


def run_filecheck(text: str, checks: str, tmp_path: Path) -> None:
    """Run the ``filecheck`` package (LLVM FileCheck clone) on ``text``.

    ``checks`` holds the ``CHECK:`` lines; on mismatch the test fails with
    FileCheck's diagnostic and the text that was checked.
    """
    check_file = tmp_path / "checks.txt"
    input_file = tmp_path / "input.mlir"
    check_file.write_text(checks)
    input_file.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "filecheck", str(check_file), "--input-file", str(input_file)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(f"FileCheck failed:\n{proc.stderr}{proc.stdout}\n--- input ---\n{text}")


@pytest.fixture
def filecheck(tmp_path: Path):
    """``filecheck(text, checks)`` — assert the FileCheck directives match ``text``."""
    return lambda text, checks: run_filecheck(text, checks, tmp_path)
