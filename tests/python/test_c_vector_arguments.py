"""By-value vector arguments and results of marker calls (issue 23 item 4): a
``vector_size`` double vector passed to the differentiated function, or returned by it,
was taken as constant (derivative 0, no error). zymase has no derivative rules for
vector values, so it refuses them with one error naming the function, the argument
and the source line; an ``enzyme_const`` vector argument is fine."""

from __future__ import annotations

import subprocess

import pytest
from forking_cli import run_cli

HEADER = """#include <stdio.h>
typedef double v2 __attribute__((vector_size(16)));
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern v2 __enzyme_autodiff_v2(void *, ...);
extern int enzyme_const;
double w(v2 x) { return x[0] * x[0] + 3.0 * x[1]; }
double wa(v2 x, double a) { return a * a * (x[0] + x[1]); }
v2 grow(double a) { v2 r = {a, a * a}; return r; }
"""


def _build(tmp_path, zymase_cli, body: str, level: str):
    src = tmp_path / "vec.c"
    src.write_text(HEADER + "int main(void) {\n    v2 x = {1.5, 2.0};\n" + body + "\n    return 0;\n}\n")
    exe = tmp_path / "vec"
    proc = run_cli(["cc", level, "-g", str(src), "-o", str(exe)],
                   cwd=tmp_path)
    return proc, exe


def _one_error(proc, *needles: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.startswith("zymase: error:")]
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert "hint:" in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_vector_argument_of_reverse_mode_is_refused(tmp_path, zymase_cli, level):
    proc, _ = _build(tmp_path, zymase_cli, "    v2 d = __enzyme_autodiff_v2((void *)w, x);\n"
                     "    printf(\"%g %g\\n\", d[0], d[1]);", level)
    _one_error(proc, "parameter 1 of 'w'", "vector of 2 double", "vec.c:12:", "enzyme_const")


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_vector_argument_of_forward_mode_is_refused(tmp_path, zymase_cli, level):
    proc, _ = _build(tmp_path, zymase_cli, "    v2 t = {1.0, 0.0};\n"
                     "    printf(\"%g\\n\", __enzyme_fwddiff((void *)w, x, t));", level)
    _one_error(proc, "parameter 1 of 'w'", "vector of 2 double", "vec.c:13:")


def test_vector_result_is_refused(tmp_path, zymase_cli):
    proc, _ = _build(tmp_path, zymase_cli, "    printf(\"%g\\n\", __enzyme_autodiff((void *)grow, 2.0));", "-O0")
    _one_error(proc, "the result of 'grow'", "vector of 2 double", "vec.c:12:")


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_constant_vector_argument_is_differentiated_around(tmp_path, zymase_cli, level):
    # d/da of a^2 (x0 + x1) = 2 a (x0 + x1) = 2 * 0.5 * 3.5
    proc, exe = _build(tmp_path, zymase_cli,
                       "    printf(\"%.17g\\n\", __enzyme_autodiff((void *)wa, enzyme_const, x, 0.5));", level)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True)
    assert float(out.stdout) == pytest.approx(3.5, rel=1e-15)
