"""A dupnoneed pointer argument: the derivative does not have to write the primal memory.

``enzyme_dupnoneed`` says the caller will not read the primal buffer after the call. The
derivative function's parameter for it gets LLVM's ``dead_on_return`` (with the primal's
``noalias``), so the stores into it that nothing reads again are deleted: here the polar
coordinates written to ``out`` are not stored at all, only the shadow is used. (LLVM's
dead-store elimination does this at -O2 and -O3, for stores outside loops; a loop filling
the buffer stays.) The gradient is checked against its closed form.
"""

from __future__ import annotations

import re

import pytest
from c_harness import build_and_run, emit_llvm, function_ir

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

/* a C output parameter */
void polar(double *restrict out, const double *restrict x) {
    out[0] = sqrt(x[0] * x[0] + x[1] * x[1]);
    out[1] = atan2(x[1], x[0]);
}

__attribute__((noinline)) void grad(double *out, double *dout, const double *x, double *dx) {
    __enzyme_autodiff((void *)polar, enzyme_dupnoneed, out, dout, enzyme_dup, x, dx);
}

int main(void) {
    double x[2] = {0.6, -0.8}, dx[2] = {0, 0}, out[2] = {-1, -1}, dout[2] = {1.0, 2.0};
    grad(out, dout, x, dx);
    /* d(r + 2 theta)/dx = (x0 / r - 2 x1 / r^2, x1 / r + 2 x0 / r^2) with r = 1 */
    double e0 = fabs(dx[0] - (0.6 + 1.6)), e1 = fabs(dx[1] - (-0.8 + 1.2));
    printf("%g %g\n", e0, e1);
    return e0 > 1e-12 || e1 > 1e-12;
}
"""


@pytest.mark.parametrize("opt", ["-O2", "-O3"])
def test_the_primal_output_of_a_dupnoneed_argument_is_not_stored(tmp_path, zymase_cli, opt):
    src = tmp_path / "polar.c"
    src.write_text(PROGRAM)
    body = function_ir(emit_llvm(src, [opt], tmp_path, zymase_cli), "grad")
    out_param = re.match(r"define [^\n]*@grad\(ptr [^%]*(%\w+)", body).group(1)
    into_out = {out_param} | set(re.findall(rf"(%[\w.]+) = getelementptr [^\n]*ptr {re.escape(out_param)},", body))
    stores = [s for s in re.findall(r"store [^\n]*, ptr (%[\w.]+)", body) if s in into_out]
    assert not stores, body
    build_and_run(src, [opt], tmp_path, zymase_cli)


FORWARD = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

void scale(double a, double *restrict out, const double *restrict x) {
    out[0] = a * x[0];
    out[1] = sin(a) * x[1];
}

__attribute__((noinline)) void tangent(double a, double da, double *out, double *dout, const double *x, double *dx) {
    __enzyme_fwddiff((void *)scale, enzyme_dup, a, da, enzyme_dupnoneed, out, dout, enzyme_dup, x, dx);
}

int main(void) {
    double a = 0.5, da = 1.0, x[2] = {2.0, 3.0}, dx[2] = {0.25, -1.0}, out[2], dout[2] = {0, 0};
    tangent(a, da, out, dout, x, dx);
    double e0 = fabs(dout[0] - (da * x[0] + a * dx[0]));
    double e1 = fabs(dout[1] - (cos(a) * da * x[1] + sin(a) * dx[1]));
    printf("%g %g\n", e0, e1);
    return e0 > 1e-12 || e1 > 1e-12;
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_forward_mode_marks_the_primal_pointer_not_a_tangent(tmp_path, zymase_cli, opt):
    # the parameter list interleaves tangents (after dup and active arguments alike in
    # forward mode): the mark must land on the primal `out`, never on a tangent
    src = tmp_path / "scale.c"
    src.write_text(FORWARD)
    # at -O0 the written IR is the derivative as generated, before LLVM inlines it
    header = function_ir(emit_llvm(src, ["-O0"], tmp_path, zymase_cli), "fwddiffescale").split("\n")[0]
    params = header[header.index("(") + 1:].split(", ")
    marked = [i for i, p in enumerate(params) if "dead_on_return" in p]
    assert marked == [2] and params[2].startswith("ptr"), header
    build_and_run(src, [opt], tmp_path, zymase_cli)
