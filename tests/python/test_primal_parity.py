"""The code around the derivatives comes out of ``zymase cc -O2`` as clang -O2 makes it
(issue 29 item 0, primal parity; the timing comparison is bench/primal_parity.py).

The post-AD pipeline is the O-level pipeline clang runs. At -O2 and -O3 that includes the
SLP vectorizer, which LLVM's own pipeline options leave off unless asked (clang asks):
without it, straight-line code on neighbouring elements stayed scalar in zymase's build
where clang's is vector code. The gradient of
the same function is checked against a closed form, so that the vectorized primal is
also the one differentiated correctly.

A differentiated function is also a primal the program calls. It goes through the reader
and the writer, which drop TBAA (and debug info); when AD leaves it unchanged, the merge
keeps its original IR instead (llvm/reachable.unchanged_functions), as Enzyme, which
never rewrites the primal, does.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from c_harness import build_and_run, emit_llvm, function_ir
from forking_cli import run_cli

from zymase.llvm.reachable import unchanged_functions
from zymase.llvm.toolchain import find_clang

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;

/* straight-line code on neighbouring elements: clang -O2 SLP-vectorizes it */
double energy(const double *restrict p, double *restrict tmp) {
    tmp[0] = p[0] * p[4] + p[2] * p[6];
    tmp[1] = p[1] * p[5] + p[3] * p[7];
    tmp[2] = p[2] * p[4] - p[0] * p[6];
    tmp[3] = p[3] * p[5] - p[1] * p[7];
    return tmp[0] * tmp[2] + tmp[1] * tmp[3];
}

static int check(const char *what, double got, double want) {
    if (fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want))) return 0;
    printf("FAIL %s: got %.17g, want %.17g\n", what, got, want);
    return 1;
}

int main(void) {
    double p[8] = {0.3, -1.2, 0.7, 2.1, -0.4, 1.5, 0.9, -0.6}, dp[8] = {0};
    double tmp[4], dtmp[4] = {0};
    __enzyme_autodiff((void *)energy, enzyme_dup, p, dp, enzyme_dup, tmp, dtmp);
    /* e = A C + B D with A = p0 p4 + p2 p6, C = p2 p4 - p0 p6, B = p1 p5 + p3 p7, D = p3 p5 - p1 p7 */
    double A = p[0] * p[4] + p[2] * p[6], C = p[2] * p[4] - p[0] * p[6];
    double B = p[1] * p[5] + p[3] * p[7], D = p[3] * p[5] - p[1] * p[7];
    double want[8] = {p[4] * C - A * p[6], p[5] * D - B * p[7], p[6] * C + A * p[4], p[7] * D + B * p[5],
                      p[0] * C + A * p[2], p[1] * D + B * p[3], p[2] * C - A * p[0], p[3] * D - B * p[1]};
    int failed = 0;
    for (int i = 0; i < 8; i++) failed |= check("de/dp", dp[i], want[i]);
    return failed;
}
"""


def _vector_ops(body: str) -> int:
    return len(re.findall(r"<\d+ x double>", body))


# issue 29 item 0: the post-AD pipeline SLP-vectorizes the primal as clang -O2 does
@pytest.mark.parametrize("opt", ["-O2", "-O3"])
def test_primal_is_slp_vectorized_as_clang_does(tmp_path, zymase_cli, opt):
    src = tmp_path / "energy.c"
    src.write_text(PROGRAM)
    clang_ll = subprocess.run([*find_clang().argv, opt, "-S", "-emit-llvm", "-o", "-", str(src)],
                              capture_output=True, text=True, check=True).stdout
    assert _vector_ops(function_ir(clang_ll, "energy")) > 0, "clang itself no longer vectorizes the example"
    body = function_ir(emit_llvm(src, [opt], tmp_path, zymase_cli), "energy")
    assert _vector_ops(body) > 0, f"the primal stayed scalar:\n{body}"
    build_and_run(src, [opt], tmp_path, zymase_cli)


# issue 29 item 0: a differentiated function keeps its original IR (TBAA) as the primal
def test_differentiated_function_keeps_its_tbaa_as_primal(tmp_path, zymase_cli):
    src = tmp_path / "energy.c"
    src.write_text(PROGRAM)
    src.write_text(PROGRAM + UNRELATED.format(k=2))
    ll = emit_llvm(src, ["-O2"], tmp_path, zymase_cli)
    assert "!tbaa" in function_ir(ll, "energy"), "the primal lost its TBAA in the round trip"
    # changed only where no derivative reaches: the differentiated part comes from the
    # derivative cache, and the list of unchanged functions with it
    src.write_text(PROGRAM + UNRELATED.format(k=3))
    ll = tmp_path / "again.ll"
    build = run_cli(["cc", "-O2", "--time", "-S", "-emit-llvm", str(src), "-o", str(ll)], cwd=tmp_path)
    assert build.returncode == 0 and "part hit" in build.stderr, build.stderr
    assert "!tbaa" in function_ir(ll.read_text(), "energy")
    build_and_run(src, ["-O2"], tmp_path, zymase_cli)


UNRELATED = "double unrelated(double x) {{ return x * {k}; }}\n"

WRITTEN = """define double @f(ptr %a0) #0 {{
  %v1 = load double, ptr %a0, align 8{scope}
  ret double %v1
}}

attributes #0 = {{ {attrs} }}
"""


# issue 29 item 0: what counts as unchanged by AD
def test_unchanged_functions_ignore_alias_scopes_not_attributes():
    before = WRITTEN.format(scope="", attrs="nounwind")
    assert unchanged_functions(before, WRITTEN.format(scope=", !alias.scope !3, !noalias !7", attrs="nounwind")) == ["f"]
    assert unchanged_functions(before, WRITTEN.format(scope="", attrs="nounwind noinline")) == []
    assert unchanged_functions(before, WRITTEN.format(scope="", attrs="nounwind").replace("ret double %v1",
                                                                                     "ret double 0.0")) == []


HINTED = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;

double sumsq(const double *restrict x, int n) {
    double s = 0.0;
#pragma clang loop vectorize(enable) interleave_count(2)
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

/* outside the differentiated part: its IR is never imported */
double scale(double *restrict y, int n) {
    double s = 0.0;
#pragma clang loop vectorize(enable) interleave_count(2)
    for (int i = 0; i < n; i++) s += y[i];
    return s;
}

static void run_grad(double *x, double *dx, int n) {
    __enzyme_autodiff((void *)sumsq, enzyme_dup, x, dx, enzyme_const, n);
}

int main(void) {
    double x[5] = {1, -2, 3, 0.5, 4}, dx[5] = {0};
    run_grad(x, dx, 5);
    int failed = 0;
    for (int i = 0; i < 5; i++)
        if (fabs(dx[i] - 2 * x[i]) > 1e-12) { printf("FAIL dx[%d] = %g, want %g\n", i, dx[i], 2 * x[i]); failed = 1; }
    printf("%g %g\n", sumsq(x, 5), scale(x, 5));
    return failed;
}
"""


# issue 29 item 0: loop hints the pre-AD pipeline hides reach the post-AD pipeline in
# the functions whose original IR the merge keeps (unchanged by AD, or outside the part)
def test_vectorization_hints_reach_the_post_ad_pipeline(tmp_path, zymase_cli):
    src = tmp_path / "hinted.c"
    src.write_text(HINTED)
    ll = emit_llvm(src, ["-O2"], tmp_path, zymase_cli)
    assert "zymase.hidden" not in ll, "a vectorization hint stayed hidden from the post-AD pipeline"
    build_and_run(src, ["-O2"], tmp_path, zymase_cli)
