"""``zymase cc`` imports the engine while clang's front end runs (frontends/c.compile_c,
clang._run_clang's ``meanwhile``; issue 29): clang leaves the process idle for about
as long as the imports take. A source the derivative cache has seen unchanged is served
without the engine, so its build does not import it (the guess is a cache entry of its
own, ``.seen``); a wrong guess costs time only."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zymase.errors import CompilerDiagnostics
from zymase.llvm import toolchain

PROGRAM = r"""
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
static double cube(double x) { return x * x * x; }
int main(void) {
    printf("%.17g\n", __enzyme_autodiff((void *)cube, 2.0));
    return 0;
}
"""

# in a fresh process: whether xDSL was imported when clang's front end returned, per build
WATCH_CLANG = r"""
import sys
from zymase.cli import main
from zymase.llvm import toolchain
front_end = toolchain.c_to_llvm_ir
seen = []
def watched(*args, **kwargs):
    text = front_end(*args, **kwargs)
    seen.append("xdsl" in sys.modules)
    return text
toolchain.c_to_llvm_ir = watched
rc = main(["cc", "-O2", *sys.argv[1:], "cube.c", "-o", "cube"])
print(rc, seen)
"""


def _build(tmp_path: Path, *flags: str) -> str:
    env = dict(os.environ, ZYMASE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", WATCH_CLANG, *flags], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(tmp_path / "cube")], capture_output=True, text=True, timeout=60)
    assert float(run.stdout) == 12.0  # d/dx x^3 at 2
    return proc.stdout.strip()


def test_engine_is_imported_while_clang_runs_unless_the_cache_has_seen_the_source(tmp_path):
    (tmp_path / "cube.c").write_text(PROGRAM)
    assert _build(tmp_path) == "0 [True]"  # a new source: imported during the front end
    assert _build(tmp_path) == "0 [False]"  # unchanged: the cache serves it, no engine
    assert _build(tmp_path, "--no-cache") == "0 [True]"
    (tmp_path / "cube.c").write_text(PROGRAM.replace("x * x * x", "x * (x * x)"))
    assert _build(tmp_path) == "0 [True]"  # changed on disk: not seen


def test_work_meanwhile_stops_when_clang_ends(tmp_path):
    # an endless supply of steps: the front end returns once clang has finished, with its IR
    src = tmp_path / "cube.c"
    src.write_text(PROGRAM)
    steps = itertools.count()
    ir = toolchain.c_to_llvm_ir(src, [], 2, meanwhile=steps)
    assert "define internal double @cube(" in ir and "@__enzyme_autodiff(" in ir
    assert next(steps) >= 1  # at least one step was taken while clang ran


def test_clang_errors_are_reported_as_without_work_meanwhile(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int main(void) { return undefined_name; }\n")
    for meanwhile in (iter(()), itertools.count()):
        with pytest.raises(CompilerDiagnostics, match="use of undeclared identifier 'undefined_name'"):
            toolchain.c_to_llvm_ir(src, [], 2, meanwhile=meanwhile)
