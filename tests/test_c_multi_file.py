"""A program whose differentiated function lives in another file than its
``__enzyme_autodiff`` call (tests/c/multi_file): ``zymase cc main.c model.c physics.c``
differentiates the files together, as Enzyme's users get with link-time optimization
(``frontends/c.compile_linked``); each file alone is refused, and compiling one with
``-c`` says how to build them together."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import COMPILE_TIMEOUT, build_and_run, build_ids, builds
from forking_cli import run_cli

HERE = Path(__file__).resolve().parent / "c" / "multi_file"
CONFIGS = builds("-O0", "-O2")


@pytest.mark.parametrize("flags", CONFIGS, ids=build_ids(CONFIGS))
def test_files_of_one_program_are_differentiated_together(flags, tmp_path, zymase_cli):
    # session 32: refused before ("only its declaration is in this file"); main.c calls
    # loss (model.c), which calls energy and reads stiffness (physics.c); all three files
    # define a static `square` of their own
    build_and_run(HERE / "main.c", [*flags, "-lm"], tmp_path, zymase_cli,
                  other_sources=(HERE / "model.c", HERE / "physics.c"))


def test_one_file_alone_says_how_to_build_them_together(tmp_path):
    build = run_cli(["cc", "-O2", "-c", str(HERE / "main.c"), "-o", str(tmp_path / "main.o")],
                    timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    errors = [line for line in build.stderr.splitlines() if line.startswith("zymase: error:")]
    assert build.returncode == 1 and len(errors) == 1 and "Traceback" not in build.stderr, build.stderr
    assert "main.c:27:" in errors[0] and "only its declaration is in this file" in errors[0], errors[0]
    assert "zymase cc main.c f.c -o prog" in errors[0], errors[0]
