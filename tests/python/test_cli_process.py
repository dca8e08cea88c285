"""A command-line build process ends with the build: ``zymase cc``/``c++``/``run``/``opt``
started as a process turn the cyclic collector off for the rest of it (its garbage dies
with it; ``zymase/collect_rarely.py``), while ``main`` called with arguments (the tests,
a caller in its own process) puts the collector back as it found it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

from zymase.cli import main

IR = "define double @twice(double %x) {\n  %y = fadd double %x, %x\n  ret double %y\n}\n"


def test_a_command_line_build_collects_no_garbage(tmp_path):
    (tmp_path / "in.ll").write_text(IR)
    script = textwrap.dedent("""
        import gc, sys
        from zymase.cli import main
        sys.argv = ["zymase", "opt", "in.ll", "-o", "out.ll"]
        assert main() == 0
        print(gc.isenabled())
        """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False"]
    assert "@twice" in (tmp_path / "out.ll").read_text()


def test_main_with_arguments_leaves_the_collector_as_it_was(tmp_path):
    (tmp_path / "in.ll").write_text(IR)
    saved = gc.get_threshold()
    assert gc.isenabled()
    assert main(["opt", str(tmp_path / "in.ll"), "-o", str(tmp_path / "out.ll")]) == 0
    assert gc.isenabled() and gc.get_threshold() == saved
