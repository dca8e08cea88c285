"""Nested differentiation from C (issue 25 item 1): derivatives of functions that
themselves call __enzyme_autodiff / __enzyme_fwddiff, in every combination of modes and
four deep, built at -O0 and -O2 (all six builds with ZYMASE_TEST_ALL_LEVELS=1;
tests/c/nested)."""

from __future__ import annotations

from pathlib import Path

import pytest

from c_harness import build_and_run, builds

PROGRAMS = sorted((Path(__file__).resolve().parent / "c" / "nested").glob("*.c"))
# -O0 and -O2 in the default suite (issue 25), all six with ZYMASE_TEST_ALL_LEVELS=1
LEVELS = builds("-O0", "-O2")


def test_corpus_is_there():
    assert len(PROGRAMS) >= 3


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_nested_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


README_DRIVER = r"""
#include <math.h>
#include <stdio.h>
double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i + 1 < n; i++) { double a = x[i + 1] - x[i] * x[i], b = 1 - x[i]; s += 100 * a * a + b * b; }
    return s;
}
int main(void) {
    enum { N = 6 };
    double x[N] = {0.5, -0.2, 1.1, 0.9, -0.7, 0.3}, v[N] = {1, -0.5, 0.25, 2, 0, -1}, g[N], hv[N];
    hvp(x, v, g, hv, N);
    int bad = 0;
    for (int k = 0; k < N; k++) {
        double xp[N], xm[N], gp[N], gm[N], h = 1e-6;
        for (int i = 0; i < N; i++) { xp[i] = x[i] + h * v[i]; xm[i] = x[i] - h * v[i]; }
        grad(xp, gp, N); grad(xm, gm, N);
        if (fabs(hv[k] - (gp[k] - gm[k]) / (2 * h)) > 1e-5 * (1 + fabs(hv[k]))) { printf("FAIL %d\n", k); bad = 1; }
    }
    return bad;
}
"""


@pytest.mark.parametrize("flags", [["-O0"], ["-O2"]], ids=["O0", "O2"])
def test_readme_hessian_vector_product(flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    # the README's second-derivative idiom, as written, with an f and a check appended
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme[readme.index("**Second derivatives**"):]
    block = re.search(r"```c\n(.*?)```", section, re.S).group(1)
    program = tmp_path / "readme_hvp.c"
    program.write_text(block + README_DRIVER)
    build_and_run(program, flags, tmp_path, zymase_cli)
