"""``zymase opt`` on IR that clang's whole -O2/-O3 pipeline vectorized (what a user gives
it from another build, unlike ``zymase cc``, whose pre-AD pipeline leaves vectorization
for after AD): a time-stepped stencil whose loops become ``<2 x double>`` loads at
addresses aligned to 8 only, and a clamp that compares vectors (``fcmp`` on vectors, then
``select``); and, under -ffast-math, loops whose sums, products, maxima and minima become
``llvm.vector.reduce.*`` of ``llvm.maxnum``/``minnum`` vectors. Session 32: the
derivative's loads and stores of shadows and tape slots, written without the primal's
alignment, took the vector's own (16) and were aligned SSE moves that faulted (a segfault at
-O2 and -O3, with and without --no-preopt); the vector ``fcmp``, the reductions and the
vector maxnum/minnum were refused. Reverse and forward mode against central differences."""

from __future__ import annotations

import subprocess

import pytest

from forking_cli import run_cli

HARNESS = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

static double f(double *x, int n);
"""

STENCIL = r"""
static double f(double *x, int n) {
    double u[32], v[32];
    for (int i = 0; i < 32; i++) u[i] = x[i % n] * (1 + 0.01 * i);
    for (int t = 0; t < 3; t++) {
        for (int i = 1; i < 31; i++) v[i] = u[i] + 0.2 * (u[i - 1] - 2 * u[i] + u[i + 1]) + 0.01 * u[i] * u[i];
        v[0] = u[0];
        v[31] = u[31];
        for (int i = 0; i < 32; i++) u[i] = v[i] > 0.4 ? v[i] : 0.5 * v[i];
    }
    double s = 0;
    for (int i = 0; i < 32; i++) s += u[i] * (i + 1);
    return s;
}
"""

REDUCTIONS = r"""
static double f(double *x, int n) {
    double y[40];
    for (int i = 0; i < 40; i++) y[i] = x[i % n] * (1 + 0.02 * i) - 0.1 * (i % 3);
    double s = 0, p = 1, m = -1e300, mn = 1e300;
    for (int i = 0; i < 40; i++) s += y[i] * y[i];
    for (int i = 0; i < 40; i++) p *= (1 + 0.05 * y[i]);
    for (int i = 0; i < 40; i++) m = fmax(m, y[i]);
    for (int i = 0; i < 40; i++) mn = fmin(mn, y[i] * 0.9);
    return s + p + 3 * m + 2 * mn;
}
"""

MAIN = r"""
int main(int argc, char **argv) {
    (void)argv;
    int n = 6 + argc, failures = 0;
    double x0[8], x[8], dx[8] = {0}, t[8] = {0};
    for (int i = 0; i < n; i++) x0[i] = 0.3 + 0.17 * i - 0.05 * i * i;
    memcpy(x, x0, sizeof x);
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        double h = 1e-6;
        memcpy(x, x0, sizeof x); x[i] += h; double up = f(x, n);
        memcpy(x, x0, sizeof x); x[i] -= h; double down = f(x, n);
        memcpy(x, x0, sizeof x);
        double fd = (up - down) / (2 * h);
        t[i] = 1.0;
        double fwd = __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, n);
        t[i] = 0.0;
        if (fabs(dx[i] - fd) > 1e-5 * fmax(1.0, fabs(fd)) || fabs(fwd - fd) > 1e-5 * fmax(1.0, fabs(fd))) {
            printf("x[%d]: reverse %.12g forward %.12g central difference %.12g\n", i, dx[i], fwd, fd);
            failures++;
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
"""


CASES = {
    "stencil-O2": (STENCIL, ["-O2"], [], ("fcmp ogt <2 x double>",)),
    "stencil-O3": (STENCIL, ["-O3"], [], ("x double>",)),
    "stencil-O2-no-preopt": (STENCIL, ["-O2"], ["--no-preopt"], ("x double>",)),
    "reductions-O2-fast-math": (REDUCTIONS, ["-O2", "-ffast-math"], [],
                                ("llvm.vector.reduce.fadd", "llvm.vector.reduce.fmul", "llvm.vector.reduce.fmin", "llvm.minnum.v2f64")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_derivative_of_vectorized_ir_runs_and_is_right(tmp_path, case):
    from zymase.llvm import toolchain

    function, clang_flags, opt_flags, expected = CASES[case]
    (tmp_path / "program.c").write_text(HARNESS + function + MAIN)
    clang = toolchain.find_clang().argv
    subprocess.run([*clang, "-S", "-emit-llvm", *clang_flags, "program.c", "-o", "in.ll"], cwd=tmp_path, check=True)
    vectorized = (tmp_path / "in.ll").read_text()
    assert all(needle in vectorized for needle in expected), "clang did not vectorize as expected"
    flags = [clang_flags[0], *opt_flags]
    proc = run_cli(["opt", "in.ll", *flags, "-o", "out.ll"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    toolchain.emit_object((tmp_path / "out.ll").read_text(), tmp_path / "out.o")
    toolchain.link([tmp_path / "out.o"], tmp_path / "exe", ["-lm"])
    run = subprocess.run([str(tmp_path / "exe")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and "0 failures" in run.stdout, (run.returncode, run.stdout, run.stderr)
