"""Runs the FileCheck tests in tests/mlir/filecheck: each file's ``// RUN:`` line is
executed by bash with %s replaced by the file (pipefail on, like lit). The
checkout's ``src`` goes first on PYTHONPATH, so ``zymase-opt`` runs this tree's
code even when the installed entry point belongs to another checkout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "filecheck"
FILES = sorted(HERE.glob("*.mlir"))
SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_filecheck(path: Path):
    runs = [l.split("RUN:", 1)[1].strip() for l in path.read_text().splitlines() if "RUN:" in l]
    assert runs, f"{path.name} has no RUN line"
    for cmd in runs:
        cmd = cmd.replace("%s", str(path))
        if cmd.startswith("not "):
            # `not X | filecheck`: X must fail; pipefail would fail the pipeline.
            head, _, tail = cmd[4:].partition("|")
            cmd = (
                f"out=$(mktemp); trap 'rm -f $out' EXIT; "
                f"if {head} > $out 2>&1; then echo 'expected a failure'; cat $out; exit 1; fi; "
                f"{tail} < $out"
            )
            proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=ENV)
        else:
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, env=ENV)
        assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
