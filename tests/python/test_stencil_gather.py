"""Stencil reverse loops with their adjoint adds gathered (autodiff/stencil_gather.py).

Each program differentiates one function of ``u`` (dup) and checks every entry of the
gradient against central differences, at -O0 and -O2. The stencils' reverse loops add
into ``du`` at several offsets; at -O2 the engine gathers them, one element per
iteration (``ZYMASE_DEBUG_TAPE=1`` says so), and LLVM vectorizes that loop. The
dependent loop must stay as it is: gathered, its gradient would be wrong (a
contribution would be computed from an adjoint before another iteration had added to
it).
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
#include <stdlib.h>
#include <string.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_dupnoneed, enzyme_const;
enum { N = 48 };

/* u: n + 4 inputs; v: n + 4 outputs, the gradient is that of sum_j w[j] v[j] */
void f(const double *restrict u, double *restrict v, const double *restrict w, int n) {
BODY
}

static double objective(const double *u, const double *w) {
    double v[N + 4], s = 0.0;
    memset(v, 0, sizeof v);
    f(u, v, w, N);
    for (int j = 0; j < N + 4; j++) s += w[j] * v[j];
    return s;
}

__attribute__((noinline)) void grad(double *u, double *du, double *v, double *dv, const double *w, int n) {
    __enzyme_autodiff((void *)f, enzyme_dup, u, du, enzyme_dupnoneed, v, dv, enzyme_const, w, enzyme_const, n);
}

int main(void) {
    double u[N + 4], du[N + 4], v[N + 4], dv[N + 4], w[N + 4];
    for (int i = 0; i < N + 4; i++) {
        u[i] = 0.6 + 0.3 * sin(1.0 + i);
        w[i] = 1.0 + 0.5 * cos(0.3 * i);
        du[i] = 0.0;
        v[i] = 0.0;
    }
    memcpy(dv, w, sizeof dv);
    volatile int n = N; /* not a constant where grad is compiled */
    grad(u, du, v, dv, w, n);
    double worst = 0.0;
    for (int i = 0; i < N + 4; i++) {
        double h = 1e-6, up[N + 4], um[N + 4];
        memcpy(up, u, sizeof up);
        memcpy(um, u, sizeof um);
        up[i] += h;
        um[i] -= h;
        double fd = (objective(up, w) - objective(um, w)) / (2 * h);
        double err = fabs(fd - du[i]) / (1.0 + fabs(fd));
        if (err > worst) worst = err;
        if (!(err < 1e-6)) printf("FAIL du[%d] = %.12g, finite differences %.12g\n", i, du[i], fd);
    }
    printf("worst %g\n", worst);
    return !(worst < 1e-6);
}
"""

GATHERED_CASES = {
    # the heat equation's step: offsets -1, 0, +1, linear
    "three_point": "for (int i = 1; i <= n; i++) v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);",
    # asymmetric offsets (-1, +2, +3), nonlinear: the reverse reads u again in every loop
    "asymmetric": "for (int i = 1; i <= n; i++) v[i] = sin(u[i - 1]) * u[i + 3] + u[i + 2] * u[i + 2] * w[i];",
    # a boundary condition: the first and last cells read their mirror image (peeled
    # iterations, then a stencil in the middle)
    "boundary": """for (int i = 0; i < n; i++) {
        double left = i > 0 ? u[i - 1] : u[1], right = i < n - 1 ? u[i + 1] : u[n - 2];
        v[i] = u[i] * (1.0 + 0.1 * (left - 2 * u[i] + right)) + 0.05 * left * right;
    }""",
    # the two buffers of a time loop, swapped each step (bench/mpi_heat.c's serial step):
    # the reverse of the inner loop reads one and adds into the other
    "time_loop": """double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    for (int i = 0; i < n + 2; i++) a[i] = u[i];
    for (int t = 0; t < 4; t++) {
        for (int i = 1; i <= n; i++) b[i] = a[i] + 0.2 * (a[i - 1] - 2 * a[i] + a[i + 1]) - 0.05 * a[i] * a[i] * a[i];
        b[0] = b[n];
        b[n + 1] = b[1];
        double *s = a;
        a = b;
        b = s;
    }
    for (int i = 0; i < n + 2; i++) v[i] = a[i];
    free(a);
    free(b);""",
}

KEPT = {
    # iteration i reads what iteration i - 1 wrote (Gauss-Seidel, in place in v): one loop
    "carried": """for (int i = 0; i < n + 4; i++) v[i] = u[i];
    for (int i = 1; i <= n; i++) v[i] = 0.5 * v[i] + 0.25 * (v[i - 1] * v[i - 1] + sin(v[i + 1]));""",
}

CASES = {**GATHERED_CASES, **KEPT}


def _program(tmp_path, body: str):
    src = tmp_path / "stencil.c"
    src.write_text(TEMPLATE.replace("BODY", body))
    return src


@pytest.mark.parametrize("case", sorted(CASES))
def test_stencil_gradients_at_O0(tmp_path, zymase_cli, case):
    build_and_run(_program(tmp_path, CASES[case]), ["-O0", "-lm"], tmp_path, zymase_cli)


GATHERED = re.compile(r"zymase: tape: f: the loop at stencil\.c:(\d+):\d+: adjoint adds at (\d+) offsets gathered")


@pytest.mark.parametrize("case,offsets", [("three_point", 3), ("asymmetric", 3), ("boundary", 3), ("time_loop", 3),
                                          ("carried", None)])
def test_stencil_gradients_and_gathered_loops_at_O2(tmp_path, zymase_cli, case, offsets):
    """ZYMASE_DEBUG_TAPE=1 names each reverse loop whose adds are gathered, with its
    number of offsets: the stencils; not the loop whose iterations depend on each other.
    The gradient matches finite differences either way."""
    src, exe = _program(tmp_path, CASES[case]), tmp_path / "stencil"
    build = run_cli(["cc", "-O2", "-g", str(src), "-o", str(exe), "-lm"],
                    env=dict(os.environ, ZYMASE_DEBUG_TAPE="1"), cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    found = [int(m.group(2)) for m in GATHERED.finditer(build.stderr)]
    assert found == ([] if offsets is None else [offsets]), build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 0, run.stdout


def test_gathered_reverse_loop_vectorizes(tmp_path, zymase_cli):
    """The three-point stencil's gradient adds into du with vector adds, in the gathered
    loop (before, the reverse loop stayed scalar: no vector add of adjoints at all)."""
    ll = emit_llvm(_program(tmp_path, GATHERED_CASES["three_point"]), ["-O2"], tmp_path, zymase_cli)
    body = function_ir(ll, "grad")
    blocks = re.split(r"\n(?=[\w.]+:)", body)
    vector_adds = [b for b in blocks if b.startswith("vector.body") and "fadd reassoc nsz <2 x double>" in b]
    assert len(vector_adds) == 1, body


@pytest.mark.parametrize("case", ["three_point", "time_loop"])
def test_gathered_loop_stores_each_element_once(tmp_path, zymase_cli, case):
    """The gathered loop loads and stores each element of du once, whatever the number of
    adds into it: the three adds of an iteration chain their running sum in a register.
    In the time loop the shadows of the two swapped buffers are not told apart, so LLVM
    kept the store of every add (before: three vector stores into du an iteration)."""
    ll = emit_llvm(_program(tmp_path, GATHERED_CASES[case]), ["-O2"], tmp_path, zymase_cli)
    body = function_ir(ll, "grad")
    blocks = re.split(r"\n(?=[\w.]+:)", body)
    # the gathered loop: vector adds of adjoints scaled by the stencil's coefficients
    # (the other vectorized loops copy adjoints in and out: adds without products)
    gathered = [b for b in blocks if b.startswith("vector.body") and "fadd reassoc nsz <2 x double>" in b
                and "fmul <2 x double>" in b]
    assert len(gathered) == 1, body
    stores = re.findall(r"store <2 x double> ([^,\s]+),", gathered[0])
    added = [s for s in stores if s != "zeroinitializer"]
    assert len(added) == 1 and len(stores) == 2, gathered[0]  # du's element, and dv's zeroed
