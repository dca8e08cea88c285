"""Shared pytest fixtures for zymase's test suite."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
C_PROGRAMS_DIR = TESTS_DIR / "c"


def zymase_command() -> list[str]:
    """The argv prefix that runs the ``zymase`` command line of this interpreter.

    The console script installed beside ``sys.executable`` comes first (that is the
    one ``pip install .`` made for this environment), then one on PATH, then
    ``python -m zymase.cli``.
    """
    beside = Path(sys.executable).parent / "zymase"
    if beside.is_file():
        return [str(beside)]
    on_path = shutil.which("zymase")
    if on_path:
        return [on_path]
    return [sys.executable, "-m", "zymase.cli"]


@pytest.fixture(scope="session")
def zymase_cli() -> list[str]:
    return zymase_command()


@pytest.fixture(scope="session")
def c_programs_dir() -> Path:
    return C_PROGRAMS_DIR
