"""The tape runtime's rare paths stay out of the derivative (issue 29 items 1-2: less IR
for LLVM to optimize and compile).

A gradient's indexed tapes grow (``__zymase_cache_regrow``) and take and give back their
spare buffers (``__zymase_tape_take``, ``__zymase_tape_give``, with atomics) at most a
few times per call; inlined at every tape site they were 2-25% of the module the post-AD
pipeline optimizes. They are ``noinline`` helpers: the derivative keeps only the calls,
and the capacity check (``__zymase_cache_reserve``, ``alwaysinline``) stays inline.
The program checks its gradient against the closed form, over calls that reuse the
spare buffers and tapes that outgrow the inline bytes and are reallocated several times.
"""

from __future__ import annotations

import re

from c_harness import build_and_run, emit_llvm

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const;

/* a counted loop (an indexed tape: reserve, spare buffer) and a loop whose trip count
   is known only when it ends (a pushed tape) */
double f(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s = sin(s) * x[i] + x[i];
    double t = 1.0;
    int k = 0;
    while (t < 1e300 && k < 3 * n) { t = t * (1.0 + x[k % n] * x[k % n]); k++; }
    return s + log(t);
}

void grad(const double *x, double *dx, int n) {
    __enzyme_autodiff((void *)f, x, dx, enzyme_const, n);
}

int main(void) {
    enum { N = 300 };
    double x[N], dx[N], ds[N];
    int failed = 0;
    for (int call = 0; call < 3; call++) {  /* later calls take the spare buffers back */
        for (int i = 0; i < N; i++) { x[i] = 0.1 + 0.001 * (i % 17) + 0.01 * call; dx[i] = 0.0; }
        grad(x, dx, N);
        /* closed form: s_i = sin(s_{i-1}) x_i + x_i, backwards; log t = sum log(1 + x^2) */
        double s[N + 1];
        s[0] = 0.0;
        for (int i = 0; i < N; i++) s[i + 1] = sin(s[i]) * x[i] + x[i];
        double adj = 1.0;
        for (int i = N - 1; i >= 0; i--) { ds[i] = adj * (sin(s[i]) + 1.0); adj *= cos(s[i]) * x[i]; }
        for (int i = 0; i < N; i++) {
            double expect = ds[i] + 3.0 * 2.0 * x[i] / (1.0 + x[i] * x[i]);
            if (fabs(dx[i] - expect) > 1e-9 * (1.0 + fabs(expect))) {
                printf("FAIL call %d dx[%d] = %.17g, expected %.17g\n", call, i, dx[i], expect);
                failed = 1;
            }
        }
    }
    return failed;
}
"""


# issue 29 items 1-2: the derivative's IR without the tape runtime's rare paths inlined
def test_tape_growth_and_spare_buffers_stay_out_of_the_derivative(tmp_path, zymase_cli):
    src = tmp_path / "tapes.c"
    src.write_text(PROGRAM)
    ll = emit_llvm(src, ["-O2"], tmp_path, zymase_cli)
    # the functions holding a spare buffer's atomics, and those growing an indexed tape
    bodies = dict(re.findall(r"^define [^\n]*@([\w.]+)\((.*?)^}", ll, re.M | re.S))
    atomics = {name for name, body in bodies.items() if "atomicrmw" in body}
    assert atomics == {"__zymase_tape_take", "__zymase_tape_give"}, f"spare-buffer code inlined into {sorted(atomics)}"
    growing = {name for name, body in bodies.items() if re.search(r"call [^@]*@__zymase_cache_regrow\(", body)}
    assert growing and all(not name.startswith("__zymase") for name in growing), sorted(growing)
    assert "__zymase_cache_regrow" in bodies and "__zymase_cache_reserve" not in bodies, sorted(bodies)
    build_and_run(src, ["-O2"], tmp_path, zymase_cli)
