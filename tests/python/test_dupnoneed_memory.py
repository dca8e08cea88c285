"""A dupnoneed pointer argument: the derivative does not have to write the primal memory.

``enzyme_dupnoneed`` says the caller will not read the primal buffer after the call. The
derivative function's parameter for it gets LLVM's ``dead_on_return`` (with the primal's
``noalias``), so the stores into it that nothing reads again are deleted: here the polar
coordinates written to ``out`` are not stored at all, only the shadow is used. LLVM's
dead-store elimination does this for stores outside loops; for the stores of a loop
(a normalization filling ``out``), zymase's own pass (``dead_primal_stores``) does it
when no live load reads the buffer, and keeps them when one does. The gradients are
checked against closed forms, with ``out`` filled with NaN before the call so that a
store wrongly dropped shows in the result.
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


def _stores_into_first_parameter(body: str) -> list[str]:
    """Stores of function IR ``body`` whose address is its first parameter or derives
    from it through getelementptr (transitively)."""
    param = re.match(r"define [^\n]*?\(ptr [^%]*(%[\w.]+)", body).group(1)
    derived, grew = {param}, True
    while grew:
        found = {d for d, base in re.findall(r"(%[\w.]+) = getelementptr [^\n]*?ptr (%[\w.]+),", body) if base in derived}
        grew = not found <= derived
        derived |= found
    return [s for s in re.findall(r"store [^\n]*, ptr (%[\w.]+)", body) if s in derived]


@pytest.mark.parametrize("opt", ["-O2", "-O3"])
def test_the_primal_output_of_a_dupnoneed_argument_is_not_stored(tmp_path, zymase_cli, opt):
    src = tmp_path / "polar.c"
    src.write_text(PROGRAM)
    body = function_ir(emit_llvm(src, [opt], tmp_path, zymase_cli), "grad")
    assert not _stores_into_first_parameter(body), body
    build_and_run(src, [opt], tmp_path, zymase_cli)


NORMALIZE = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;
enum { N = 1000 };

__attribute__((noinline)) static double norm(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

/* out = x / |x| in a loop; the result sums w . out, reading out back */
double weighted(double *restrict out, const double *restrict x, const double *restrict w, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] / norm(x, n);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += w[i] * out[i];
    return s;
}

__attribute__((noinline)) void grad(double *out, double *dout, const double *x, double *dx, const double *w, int n) {
    __enzyme_autodiff((void *)weighted, enzyme_dupnoneed, out, dout, enzyme_dup, x, dx, enzyme_const, w,
                      enzyme_const, n);
}

int main(void) {
    static double x[N], dx[N], w[N], out[N], dout[N];
    double r2 = 0.0, wx = 0.0;
    for (int i = 0; i < N; i++) {
        x[i] = sin(0.37 * i + 0.1);
        w[i] = 0.5 + 0.25 * cos(1.3 * i);
        out[i] = NAN;
        r2 += x[i] * x[i];
        wx += w[i] * x[i];
    }
    grad(out, dout, x, dx, w, N);
    /* d(w . x / |x|)/dx_j = w_j / |x| - (w . x) x_j / |x|^3 */
    double r = sqrt(r2), err = 0.0;
    for (int j = 0; j < N; j++) {
        double want = w[j] / r - wx * x[j] / (r2 * r);
        err = fmax(err, fabs(dx[j] - want) / fmax(fabs(want), 1e-3));
    }
    printf("max relative error %g\n", err);
    return !(err < 1e-12);
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2", "-O3"])
def test_a_loop_filling_a_dupnoneed_buffer_is_dropped(tmp_path, zymase_cli, opt):
    # the forward sweep would store x[i] / |x| into out, one division per element, only
    # for the sum (whose value the gradient does not need) to read it back
    src = tmp_path / "normalize.c"
    src.write_text(NORMALIZE)
    body = function_ir(emit_llvm(src, [opt, "-fno-math-errno"], tmp_path, zymase_cli), "grad")
    assert not _stores_into_first_parameter(body), body
    assert not re.search(r"fdiv <", body), body  # one 1/|x| and the scalar chain remain
    build_and_run(src, [opt, "-fno-math-errno"], tmp_path, zymase_cli)


READ_BACK = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;
enum { N = 64 };

/* out is scratch, but what is read back from it is also written to `total`, memory the
   caller does want: those loads, and so the stores into out, must stay */
double energy(double *restrict out, double *restrict total, const double *restrict x, int n) {
    for (int i = 0; i < n; i++)
        out[i] = sin(x[i]);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += out[i] * out[i] * (1.0 + i);
    *total = s;
    return s;
}

__attribute__((noinline)) void grad(double *out, double *dout, double *total, double *dtotal, const double *x,
                                    double *dx, int n) {
    __enzyme_autodiff((void *)energy, enzyme_dupnoneed, out, dout, enzyme_dup, total, dtotal, enzyme_dup, x, dx,
                      enzyme_const, n);
}

int main(void) {
    static double x[N], dx[N], out[N], dout[N];
    double total = NAN, dtotal = 0.0, want = 0.0;
    for (int i = 0; i < N; i++) {
        x[i] = 0.1 * i - 2.0;
        out[i] = NAN;
        want += sin(x[i]) * sin(x[i]) * (1.0 + i);
    }
    grad(out, dout, &total, &dtotal, x, dx, N);
    double err = fabs(total - want) / want;
    for (int i = 0; i < N; i++)
        err = fmax(err, fabs(dx[i] - 2.0 * sin(x[i]) * cos(x[i]) * (1.0 + i)));
    printf("max error %g (total %g, want %g)\n", err, total, want);
    return !(err < 1e-12);
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_a_dupnoneed_buffer_read_for_a_wanted_result_keeps_its_stores(tmp_path, zymase_cli, opt):
    src = tmp_path / "energy.c"
    src.write_text(READ_BACK)
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
