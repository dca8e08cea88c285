"""Runs the FileCheck tests in tests/mlir/filecheck: each file's ``// RUN:`` line is
executed with %s replaced by the file, with lit's meaning (pipefail on; ``not`` wants a
failure). A line of the usual form, ``[not] zymase-opt ARGS [2>&1 [>/dev/null]] |
filecheck ARGS``, runs ``zymase-opt`` through the suite's pre-imported server
(tests/forking_cli.py: a fork instead of a Python start-up and xDSL import per line, as
every other command-line test does; so it runs the zymase the tests import) and pipes its
output into ``filecheck``; any other line is run by bash, with the checkout's ``src``
first on PYTHONPATH."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from forking_cli import run_cli

HERE = Path(__file__).parent / "filecheck"
FILES = sorted(HERE.glob("*.mlir"))
SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}

# `[not] zymase-opt ARGS [2>&1 [>/dev/null]] | filecheck ARGS`: which of zymase-opt's
# streams reach filecheck follows the redirection
_PIPELINE = re.compile(r"(?P<not>not )?zymase-opt (?P<opt>[^|<>]*?)(?P<streams> 2>&1(?: >/dev/null)?)?"
                       r" \| (?P<check>filecheck [^|<>&;]*)")
_STREAMS = {None: lambda run: run.stdout, " 2>&1": lambda run: run.stdout + run.stderr,
            " 2>&1 >/dev/null": lambda run: run.stderr}


def _run_pipeline(cmd: str) -> tuple[bool, str]:
    """Run one RUN line; (passed, what to show when it did not)."""
    line = _PIPELINE.fullmatch(cmd)
    if line is None:
        return _run_in_bash(cmd)
    opt = run_cli(shlex.split(line["opt"]), program="zymase-opt", timeout=600)
    failed = opt.returncode != 0
    if failed != bool(line["not"]):
        expected = "a failure" if line["not"] else "success"
        return False, f"zymase-opt exited with {opt.returncode}, expected {expected}\n{opt.stdout}\n{opt.stderr}"
    check = subprocess.run(shlex.split(line["check"]), input=_STREAMS[line["streams"]](opt), capture_output=True,
                           text=True, env=ENV)
    return check.returncode == 0, f"{check.stdout}\n{check.stderr}"


def _run_in_bash(cmd: str) -> tuple[bool, str]:
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
    return proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_filecheck(path: Path):
    runs = [l.split("RUN:", 1)[1].strip() for l in path.read_text().splitlines() if "RUN:" in l]
    assert runs, f"{path.name} has no RUN line"
    for cmd in runs:
        passed, output = _run_pipeline(cmd.replace("%s", str(path)))
        assert passed, f"{cmd}\n{output}"
