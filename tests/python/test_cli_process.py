"""A command-line build process ends with the build: ``zymase cc``/``c++``/``run``/``opt``
started as a process turn the cyclic collector off for the rest of it (its garbage dies
with it; ``zymase/collect_rarely.py``) and end without Python's teardown once the output
is flushed (``cli._end_process``), while ``main`` called with arguments (the tests, a
caller in its own process) returns and puts the collector back as it found it."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap

from zymase import cli
from zymase.cli import main

IR = "define double @twice(double %x) {\n  %y = fadd double %x, %x\n  ret double %y\n}\n"


def _run(tmp_path, script: str) -> subprocess.CompletedProcess:
    (tmp_path / "in.ll").write_text(IR)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=tmp_path, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)


def test_a_command_line_build_collects_no_garbage(tmp_path):
    # (another thread runs, so main returns instead of ending the process)
    proc = _run(tmp_path, """
        import gc, sys, threading
        from zymase.cli import main
        done = threading.Event()
        threading.Thread(target=done.wait).start()
        sys.argv = ["zymase", "opt", "in.ll", "-o", "out.ll"]
        code = main()
        print(code, gc.isenabled())
        done.set()
        """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "False"]
    assert "@twice" in (tmp_path / "out.ll").read_text()


def test_a_command_line_build_ends_without_teardown(tmp_path):
    script = """
        import atexit, sys
        from zymase.cli import main
        atexit.register(lambda: print("teardown"))
        sys.argv = ["zymase", "opt", {!r}]
        sys.exit(main())
        """
    proc = _run(tmp_path, script.format("in.ll"))
    assert proc.returncode == 0, proc.stderr
    assert "@twice" in proc.stdout and "teardown" not in proc.stdout  # flushed, then no atexit
    failed = _run(tmp_path, script.format("missing.ll"))
    assert failed.returncode == 1 and failed.stderr.startswith("zymase: error: ")
    assert "teardown" not in failed.stdout


def test_a_profiled_or_threaded_process_exits_as_usual():
    sys.setprofile(lambda *args: None)
    try:
        assert cli._end_process(3) == 3
    finally:
        sys.setprofile(None)


def test_main_with_arguments_leaves_the_collector_as_it_was(tmp_path):
    (tmp_path / "in.ll").write_text(IR)
    saved = gc.get_threshold()
    assert gc.isenabled()
    assert main(["opt", str(tmp_path / "in.ll"), "-o", str(tmp_path / "out.ll")]) == 0
    assert gc.isenabled() and gc.get_threshold() == saved
