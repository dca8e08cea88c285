// The same array passed as a BLAS call's input and its output (session 32): cblas_daxpy(n,
// a, x, 1, x, 1) scales x by 1 + a, cblas_dcopy(n, x, 1, x, 1) and cblas_dswap(n, x, 1, x,
// 1) leave it as it is. The reverse sweep must read the x the call saw (d/da of axpy was
// taken from the x it wrote, 1 + a times too large) and copy's adjoint must survive the
// zeroing of its output's (copy(x, x) gave zero gradients). Reverse and forward mode
// against closed forms and central differences.
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok)
        failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

#define N 6

// sum_i w_i x_i^2 after the calls: (1 + a)^2 sum w_i x0_i^2 when `which` has axpy
static double f(double *x, double a, int n, int which) {
    if (which & 1)
        cblas_daxpy(n, a, x, 1, x, 1);
    if (which & 2)
        cblas_dcopy(n, x, 1, x, 1);
    if (which & 4)
        cblas_dswap(n, x, 1, x, 1);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i] * (i + 1);
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 1 + argc;
    double x0[N], x[N], dx[N], a = 0.3;
    for (int i = 0; i < n; i++)
        x0[i] = 0.3 * i - 1.1;
    for (int which = 1; which < 8; which++) {
        double k = which & 1 ? 1 + a : 1, w = 0;
        for (int i = 0; i < n; i++)
            w += (i + 1) * x0[i] * x0[i];
        memcpy(x, x0, sizeof x);
        memset(dx, 0, sizeof dx);
        double da = __enzyme_autodiff((void *)f, enzyme_dup, x, dx, a, enzyme_const, n, enzyme_const, which);
        check("d/da", which, da, which & 1 ? 2 * k * w : 0, 1e-12);
        for (int i = 0; i < n; i++)
            check("d/dx_i", which * 10 + i, dx[i], 2 * k * k * (i + 1) * x0[i], 1e-12);
        // forward: direction (1 on x_2, 1 on a)
        double t[N] = {0};
        t[2] = 1;
        memcpy(x, x0, sizeof x);
        double got = __enzyme_fwddiff((void *)f, enzyme_dup, x, t, a, 1.0, enzyme_const, n, enzyme_const, which);
        check("forward", which, got, 2 * k * k * 3 * x0[2] + (which & 1 ? 2 * k * w : 0), 1e-12);
        // and against central differences of the program itself
        double h = 1e-6, xp[N], xm[N];
        memcpy(xp, x0, sizeof xp);
        memcpy(xm, x0, sizeof xm);
        xp[2] += h, xm[2] -= h;
        check("d/dx_2 fd", which, dx[2], (f(xp, a, n, which) - f(xm, a, n, which)) / (2 * h), 1e-6);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
