"""The reverse sweep of a loop nest whose inner loop needs runtime alias checks is vectorized.

The adjoint of one radix-2 pass (the FFT benchmark's Stockham pass) reads and zeroes the
output's shadow and accumulates into the input's shadow: eight streams whose shadows are
not ``noalias``, so LLVM's vectorizer guards the vector loop with runtime overlap checks.
By default LLVM widens those checks to the whole outer loop, to hoist them, assuming the
outer loop walks memory upwards; the reverse sweep walks it downwards, the widened check
always reported a conflict and only the scalar loop remained. zymase's post-AD pipeline
checks on each entry to the inner loop instead (toolchain.optimize). The gradient is
checked against central differences.
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

/* x holds 2l blocks of m values; blocks j and j + l combine into output blocks 2j, 2j + 1 */
static void pass(const double *restrict xr, const double *restrict xi, double *restrict yr, double *restrict yi,
                 const double *restrict wr, const double *restrict wi, int l, int m) {
    for (int j = 0; j < l; j++) {
        double cr = wr[j], ci = wi[j];
        const double *ar = xr + j * m, *ai = xi + j * m, *br = ar + l * m, *bi = ai + l * m;
        double *sr = yr + 2 * j * m, *si = yi + 2 * j * m, *dr = sr + m, *di = si + m;
        for (int k = 0; k < m; k++) {
            double tr = ar[k] - br[k], ti = ai[k] - bi[k];
            sr[k] = ar[k] + br[k];
            si[k] = ai[k] + bi[k];
            dr[k] = tr * cr - ti * ci;
            di[k] = tr * ci + ti * cr;
        }
    }
}

double power(const double *restrict xr, const double *restrict xi, double *restrict yr, double *restrict yi,
             const double *restrict wr, const double *restrict wi, int l, int m) {
    pass(xr, xi, yr, yi, wr, wi, l, m);
    double s = 0.0;
    for (int k = 0; k < 2 * l * m; k++) s += (k + 1) * (yr[k] * yr[k] + yi[k] * yi[k]);
    return s;
}

__attribute__((noinline)) void grad(const double *xr, double *dxr, const double *xi, double *dxi, double *yr,
                                    double *dyr, double *yi, double *dyi, const double *wr, const double *wi,
                                    int l, int m) {
    __enzyme_autodiff((void *)power, enzyme_dup, xr, dxr, enzyme_dup, xi, dxi, enzyme_dup, yr, dyr, enzyme_dup,
                      yi, dyi, enzyme_const, wr, enzyme_const, wi, enzyme_const, l, enzyme_const, m);
}

int main(void) {
    enum { L = 4, M = 16, N = 2 * L * M };
    double xr[N], xi[N], dxr[N] = {0}, dxi[N] = {0}, yr[N], yi[N], dyr[N] = {0}, dyi[N] = {0}, wr[L], wi[L];
    for (int i = 0; i < N; i++) {
        xr[i] = sin(0.7 * i);
        xi[i] = cos(1.3 * i);
    }
    for (int j = 0; j < L; j++) {
        wr[j] = cos(-3.14159265358979 * j / L);
        wi[j] = sin(-3.14159265358979 * j / L);
    }
    grad(xr, dxr, xi, dxi, yr, dyr, yi, dyi, wr, wi, L, M);
    double worst = 0.0, h = 1e-6;
    for (int i = 0; i < 2 * N; i++) {
        double *v = i < N ? &xr[i] : &xi[i - N], g = i < N ? dxr[i] : dxi[i - N], keep = *v;
        *v = keep + h;
        double up = power(xr, xi, yr, yi, wr, wi, L, M);
        *v = keep - h;
        double down = power(xr, xi, yr, yi, wr, wi, L, M);
        *v = keep;
        double fd = (up - down) / (2 * h), err = fabs(g - fd) / fmax(1.0, fabs(fd));
        if (err > worst) worst = err;
    }
    printf("%g\n", worst);
    return worst > 1e-6;
}
"""


@pytest.mark.parametrize("opt", ["-O2", "-O3"])
def test_the_adjoint_of_a_radix2_pass_is_vectorized(tmp_path, zymase_cli, opt):
    src = tmp_path / "pass.c"
    src.write_text(PROGRAM)
    body = function_ir(emit_llvm(src, [opt], tmp_path, zymase_cli), "grad")
    # the reverse of a store to y reads its shadow and zeroes it: a vector of zeros when
    # the adjoint loop is vectorized
    assert re.search(r"store <\d+ x double> zeroinitializer", body), "the adjoint loop stayed scalar"
    build_and_run(src, [opt], tmp_path, zymase_cli)
