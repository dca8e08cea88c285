"""Values the reverse sweep needs that the forward sweep saves at most once per call are
kept in slots, not on LIFO caches.

A LIFO cache is a stack struct with a 128-byte inline buffer, push and pop calls that LLVM
inlines with their growth paths, and a ``free`` before every return: on gmm and LSTM all of
their LIFO caches held values saved once per call (loop exits and joins outside any loop),
and they were a fifth of the derivative LLVM optimized. Where the saving block is in no
cycle of the CFG, the value goes in an entry-block slot instead (``tape.save_op``), which
SROA makes an SSA value. The program below needs such a value in each way the reverse
sweep saves one (a branch's value, a loop's invariant factor saved on its exit, the edge a
join was entered by); its gradient is checked against central finite differences, and
its derivative must hold no LIFO cache.
"""

from __future__ import annotations

import pytest
from c_harness import build_and_run, emit_llvm

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

/* Values the reverse sweep needs that the forward sweep computes at most once per call,
   where they do not dominate the return: a load in a branch from memory written later,
   a length computed before a loop that may be skipped, a factor of a loop of unknown trip
   count, the edge a three-way join was entered by. */
double f(double *a, const double *w, int n, int mode) {
    double t = 1.0;
    if (mode > 0) {
        t = a[0];
        a[0] = 0.5 * t * t;
    }
    double s = 0.0;
    if (n > 1) {
        int m = n - 1;
        for (int i = 0; i < m; i++) s += w[i] * a[i] * a[i + 1];
        s *= sin(a[m]);
        double c = cos(a[1]);
        for (int k = 0; k < n && s < 4.0; k++) s += c * a[k] * a[k];
    }
    double r;
    if (mode == 0) r = sin(s);
    else if (mode == 1) r = s * t;
    else r = exp(0.1 * t) * s;
    return r + t * s;
}

__attribute__((noinline)) void grad(double *a, double *da, const double *w, int n, int mode) {
    __enzyme_autodiff((void *)f, enzyme_dup, a, da, enzyme_const, w, enzyme_const, n, enzyme_const, mode);
}

int main(int argc, char **argv) {
    enum { N = 9 };
    double a[N], da[N], w[N], b[N];
    int fails = 0;
    for (int mode = 0; mode < 3; mode++)
        for (int n = argc - 1; n <= N; n += 4) {
            for (int i = 0; i < N; i++) { a[i] = 0.3 + 0.1 * i * (mode + 1); w[i] = 1.0 - 0.05 * i; da[i] = 0.0; }
            grad(a, da, w, n, mode);
            for (int i = 0; i < N; i++) a[i] = 0.3 + 0.1 * i * (mode + 1);
            for (int i = 0; i < N; i++) {
                double h = 1e-6;
                for (int j = 0; j < N; j++) b[j] = a[j];
                b[i] += h;
                double up = f(b, w, n, mode);
                for (int j = 0; j < N; j++) b[j] = a[j];
                b[i] -= h;
                double down = f(b, w, n, mode);
                double fd = (up - down) / (2 * h);
                if (!(fabs(da[i] - fd) <= 1e-6 * fmax(1.0, fabs(fd)))) {
                    printf("FAIL mode %d n %d da[%d] = %.12g, finite difference %.12g\n", mode, n, i, da[i], fd);
                    fails++;
                }
            }
        }
    printf("%d failures\n", fails);
    return fails != 0;
}
"""


@pytest.fixture
def program(tmp_path):
    src = tmp_path / "once.c"
    src.write_text(PROGRAM)
    return src


def test_values_saved_once_per_call_need_no_lifo_cache(program, tmp_path, zymase_cli):
    ll = emit_llvm(program, ["-O0"], tmp_path, zymase_cli)
    assert "diffef" in ll and "[128 x i8]" not in ll and "__zymase_cache_push" not in ll, ll


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_gradient_through_once_per_call_slots(program, tmp_path, zymase_cli, opt):
    build_and_run(program, [opt], tmp_path, zymase_cli)
