"""Reverse loops run in ascending order when their iterations commute (autodiff/ascending.py).

Each program differentiates one loop over ``x`` (dup) and checks every entry of the
gradient against central differences. The independent loops are the ones the reverse
sweep now runs upwards; their reverse must also come out of LLVM's vectorizer without
the shuffles that reverse every vector of a loop running downwards. The dependent
loops must keep the descending order: run upwards, each of them gives a wrong
gradient (a store's reverse would read its adjoint before a later iteration's load
had added to it).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from c_harness import build_and_run, emit_llvm, function_ir
from forking_cli import run_cli

TEMPLATE = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
enum { N = 64 };

HELPERS
/* one loop, in place, over n = N or 2N elements (n is not a constant: the loops stay
   loops); the gradient is that of sum_j w[j] x[j] afterwards (the seed dx = w) */
void f(double *restrict x, const double *restrict w, int n) {
BODY
}

static double objective(const double *x0, const double *w) {
    double x[2 * N], s = 0.0;
    memcpy(x, x0, sizeof x);
    f(x, w, N);
    for (int j = 0; j < 2 * N; j++) s += w[j] * x[j];
    return s;
}

__attribute__((noinline)) void grad(double *x, double *dx, const double *w, int n) {
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, w, enzyme_const, n);
}

int main(void) {
    double x0[2 * N], x[2 * N], dx[2 * N], w[2 * N];
    for (int i = 0; i < 2 * N; i++) {
        x0[i] = 0.6 + 0.3 * sin(1.0 + i);
        w[i] = 1.0 + 0.5 * cos(0.3 * i);
    }
    memcpy(x, x0, sizeof x);
    memcpy(dx, w, sizeof dx);
    volatile int n = N; /* not a constant where grad is compiled */
    grad(x, dx, w, n);
    double worst = 0.0;
    for (int i = 0; i < 2 * N; i++) {
        double h = 1e-6, xp[2 * N], xm[2 * N];
        memcpy(xp, x0, sizeof xp);
        memcpy(xm, x0, sizeof xm);
        xp[i] += h;
        xm[i] -= h;
        double fd = (objective(xp, w) - objective(xm, w)) / (2 * h);
        double err = fabs(fd - dx[i]) / (1.0 + fabs(fd));
        if (err > worst) worst = err;
        if (!(err < 1e-6)) printf("FAIL dx[%d] = %.12g, finite differences %.12g\n", i, dx[i], fd);
    }
    printf("worst %g\n", worst);
    return !(worst < 1e-6);
}
"""

BUTTERFLY = r"""
/* within one call a and b are different arrays */
static void butterfly(double *restrict a, double *restrict b, const double *restrict c, int m) {
    for (int j = 0; j < m; j++) {
        double u = a[j], v = b[j];
        a[j] = u + v;
        b[j] = (u - v) * c[j];
    }
}
"""

# iterations that commute: each touches only its own elements
INDEPENDENT = {
    # in place, one element per iteration
    "in_place": "for (int i = 0; i < 2 * n; i++) x[i] = x[i] * x[i] * w[i] + sin(x[i]);",
    # interleaved pairs (stride 16 bytes, offsets 0 and 8): the same base, never the same bytes
    "interleaved": """for (int i = 0; i < n; i++) {
        double re = x[2 * i], im = x[2 * i + 1];
        x[2 * i] = re * w[i] - im * w[i + n];
        x[2 * i + 1] = re * w[i + n] + im * w[i];
    }""",
    # two halves through the restrict parameters of an inlined callee (the FFT's passes)
    "restrict_halves": "butterfly(x, x + n, w, n);",
    # a running sum: the adjoint its phi carries is the final sum's, in every iteration
    "sum": """double s = 0.0;
    for (int i = 0; i < n; i++) {
        s += x[i] * x[i] * w[i];
        x[i] = sin(x[i]);
    }
    x[n] += s;""",
    # two running sums, one of them by fused multiply-adds
    "two_sums": """double s = 0.0, t = 0.0;
    for (int i = 0; i < n; i++) {
        s = fma(x[i], w[i], s);
        t -= x[i] * w[i + n];
        x[i] *= w[i];
    }
    x[n] += s * t;""",
    # a store N elements away from a load of another iteration, further than the N
    # iterations of a loop with a constant count reach
    "constant_count": """for (int i = 0; i < N; i++) {
        double u = x[i], v = x[i + N];
        x[i] = u + v;
        x[i + N] = (u - v) * w[i];
    }""",
}

# iterations that depend on each other through x
DEPENDENT = {
    # iteration i writes what iteration i + 1 reads
    "recurrence": "for (int i = 0; i + 1 < 2 * n; i++) x[i + 1] = x[i + 1] * x[i] + sin(x[i]);",
    # iteration i reads what iteration i + 1 writes (an anti-dependence)
    "anti": "for (int i = 0; i + 1 < 2 * n; i++) x[i] = x[i] + 0.75 * x[i + 1] * w[i];",
    # every iteration writes the same element
    "same_element": "for (int i = 1; i < 2 * n; i++) x[0] = x[0] * 0.9 + x[i] * x[i] * w[i];",
    # a store two elements ahead, read back two iterations later
    "distance_two": "for (int i = 0; i + 2 < 2 * n; i++) x[i + 2] = x[i + 2] + x[i] * x[i] * w[i];",
    # the halves overlap: restrict promises each call, not the loop over calls
    "restrict_chain": "for (int i = 0; i + 1 < n; i++) butterfly(x + i + 1, x + i + n, w + i, 1);",
    # a product: the adjoint its phi carries changes from one iteration to the next
    "product": "double p = 1.0; for (int i = 0; i < n; i++) p *= 0.5 + x[i] * w[i]; x[n] = p;",
    # prefix sums: each partial sum is also stored, so its adjoint differs per iteration
    "prefix_sums": "double s = 0.0; for (int i = 0; i < n; i++) { s += x[i] * x[i]; x[i] = s * w[i]; }",
}


# independent, but kept descending for speed (an enclosing loop runs downwards, and these
# would walk memory upwards in short runs, each further down)
DESCENDING_FOR_SPEED = {
    # the inner loop's iteration picks tape slots (exp's results) inside the outer loop's region
    "taped_inner": """for (int r = 0; r < 8; r++)
        for (int c = 0; c < n / 8; c++)
            x[r * (n / 8) + c] = exp(x[r * (n / 8) + c]) * w[c];""",
    # only loads: the reverse only accumulates, which vectorizes downwards as well
    "loads_only": "double s = 0.0; for (int i = 0; i < n; i++) s += x[i] * x[i] * w[i]; x[n] = s;",
}


def _program(tmp_path, body: str):
    src = tmp_path / "loop.c"
    src.write_text(TEMPLATE.replace("HELPERS", BUTTERFLY).replace("BODY", body))
    return src


CASES = {**INDEPENDENT, **DEPENDENT, **DESCENDING_FOR_SPEED}


# every case at -O0 and -O2, and at -O1 or -O3 by turns (the suite's time)
LEVEL_CASES = [(opt, case) for i, case in enumerate(sorted(CASES)) for opt in ("-O0", "-O2", ("-O1", "-O3")[i % 2])]


@pytest.mark.parametrize("opt,case", LEVEL_CASES)
def test_reverse_loops_match_finite_differences(tmp_path, zymase_cli, opt, case):
    body = CASES[case]
    build_and_run(_program(tmp_path, body), [opt], tmp_path, zymase_cli)


REVERSED_PAIR = re.compile(r"shufflevector <(\d+) x double> [^\n]*<i32 1, i32 0>")


def _vector_loop_bodies(body: str) -> str:
    """The blocks the loop vectorizer made (``vector.body``...): a descending loop shows
    there as lane-reversing shuffles. (The SLP vectorizer may swap the two lanes of one
    iteration's pair in a scalar loop, which reverses nothing.)"""
    blocks = re.split(r"\n(?=[\w.]+:)", body)
    return "\n".join(b for b in blocks if b.startswith("vector.body"))


@pytest.mark.parametrize("case", ["interleaved", "restrict_halves"])
def test_independent_reverse_loops_vectorize_without_reversing_vectors(tmp_path, zymase_cli, case):
    ll = emit_llvm(_program(tmp_path, INDEPENDENT[case]), ["-O2"], tmp_path, zymase_cli)
    body = function_ir(ll, "grad")
    vector_loops = _vector_loop_bodies(body)
    assert "<2 x double>" in vector_loops, "the reverse sweep was not vectorized"
    assert not REVERSED_PAIR.search(vector_loops), body


ASCENDING = re.compile(r"zymase: tape: f: the loop at loop\.c:(\d+):\d+: reversed in ascending order")


@pytest.mark.parametrize("case", sorted(CASES))
def test_which_reverse_loops_run_upwards(tmp_path, zymase_cli, case):
    """ZYMASE_DEBUG_TAPE=1 names each loop reversed upwards: exactly the independent ones."""
    src = _program(tmp_path, CASES[case])
    build = run_cli(["cc", "-O2", "-g", str(src), "-o", str(tmp_path / "loop"), "-lm"],
                    env=dict(os.environ, ZYMASE_DEBUG_TAPE="1"),
                    cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    lines = [int(m.group(1)) for m in ASCENDING.finditer(build.stderr)]
    if case not in INDEPENDENT:
        assert lines == [], build.stderr
    else:
        assert len(lines) == 1, build.stderr
