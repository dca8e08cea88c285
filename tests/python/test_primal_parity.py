"""The code around the derivatives comes out of ``zymase cc -O2`` as clang -O2 makes it
(issue 29 item 0, primal parity; the timing comparison is bench/primal_parity.py).

The post-AD pipeline is the O-level pipeline clang runs. At -O2 and -O3 that includes the
SLP vectorizer, which LLVM's own pipeline options leave off unless asked (clang asks):
without it, straight-line code on neighbouring elements (the ODE workload's reaction
terms) stayed scalar in zymase's build and ran 1.3x slower than clang's. The gradient of
the same function is checked against a closed form, so that the vectorized primal is
also the one differentiated correctly.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from c_harness import build_and_run, emit_llvm, function_ir

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
