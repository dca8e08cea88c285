"""Taped values read from a stack array keep their loop vectorizable.

The tape lowering puts a ``freeze`` on values it stores straight from a load, so that LLVM
does not turn the taping loop into a ``memcpy`` call. For a load from a stack slot that
freeze did harm: SROA replaces the load by the value stored, and InstCombine pushes the
freeze into that value's computation, into the recurrence of an accumulator (``double
acc[4]`` summed over a loop), which the loop vectorizer then no longer recognises as a
reduction. Here the gradient's forward loop must vectorize like the primal's, and the
gradient is checked against central finite differences.
"""

from __future__ import annotations

import re

import pytest
from c_harness import build_and_run, emit_llvm, function_ir

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
enum { N = 6, D = 40 };

/* four accumulators in an array: sum_b (p_r . x_b)^2 over the rows r of p */
double f(int n, int d, const double *restrict p, const double *restrict x) {
    double s = 0.0;
    for (int r = 0; r < n; r++) {
        double a[4];
        for (int b = 0; b < 4; b++) a[b] = 0.0;
        for (int c = 0; c < d; c++) {
#pragma clang fp reassociate(on)
            for (int b = 0; b < 4; b++) a[b] += p[r * d + c] * x[b * d + c];
        }
        for (int b = 0; b < 4; b++) s += a[b] * a[b];
    }
    return s;
}

__attribute__((noinline)) void grad(const double *p, double *dp, const double *x, int n, int d) {
    __enzyme_autodiff((void *)f, enzyme_const, n, enzyme_const, d, enzyme_dup, p, dp, enzyme_const, x);
}

int main(void) {
    static double p[N * D], dp[N * D], x[4 * D];
    for (int i = 0; i < N * D; i++) p[i] = 0.01 * (i % 17) - 0.05;
    for (int i = 0; i < 4 * D; i++) x[i] = 0.1 * (i % 13) - 0.4;
    grad(p, dp, x, N, D);
    double worst = 0.0, h = 1e-6;
    for (int i = 0; i < N * D; i++) {
        double keep = p[i];
        p[i] = keep + h;
        double up = f(N, D, p, x);
        p[i] = keep - h;
        double down = f(N, D, p, x);
        p[i] = keep;
        double fd = (up - down) / (2 * h);
        worst = fmax(worst, fabs(dp[i] - fd) / fmax(1.0, fabs(fd)));
    }
    printf("%g\n", worst);
    return !(worst < 1e-7);
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_an_array_accumulator_taped_from_the_stack_still_vectorizes(tmp_path, zymase_cli, opt):
    src = tmp_path / "acc.c"
    src.write_text(PROGRAM)
    if opt in ("-O2", "-O3"):  # the levels that vectorize
        body = function_ir(emit_llvm(src, [opt], tmp_path, zymase_cli), "grad")
        assert "freeze" not in body, body
        assert re.search(r"fmuladd\.v\d+f64", body), body
    build_and_run(src, [opt], tmp_path, zymase_cli)
