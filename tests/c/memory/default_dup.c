/* Pointer arguments without an activity marker are duplicated (followed by their shadow), in reverse and forward mode, mixed with explicit enzyme_const and enzyme_dup, with int sizes left unmarked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-8

static double wdot(const double *x, const double *y, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (i + 1) * x[i] * y[i];
    return s;
}

/* out_i = x_i y_i */
static void hadamard(const double *x, const double *y, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] * y[i];
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7 */
    double x[NMAX], y[NMAX], dx[NMAX], dy[NMAX], tx[NMAX], ty[NMAX], out[NMAX], dout[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.5 * i - 1.0;
        y[i] = cos(0.8 * i);
        tx[i] = 0.2;
        ty[i] = -0.1 * i;
    }
    /* no markers at all: both pointers duplicated, n constant */
    for (int i = 0; i < n; i++) dx[i] = dy[i] = 0.0;
    __enzyme_autodiff((void *)wdot, x, dx, y, dy, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("wdot dx (no marker)", i, dx[i], (i + 1) * y[i], TOL);
        check("wdot dy (no marker)", i, dy[i], (i + 1) * x[i], TOL);
        fwd += (i + 1) * (tx[i] * y[i] + x[i] * ty[i]);
    }
    check("wdot forward (no marker)", n, __enzyme_fwddiff((void *)wdot, x, tx, y, ty, n), fwd, TOL);

    /* the first unmarked, the second const */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)wdot, x, dx, enzyme_const, y, n);
    for (int i = 0; i < n; i++)
        check("wdot dx (y const)", i, dx[i], (i + 1) * y[i], TOL);

    /* output array unmarked */
    for (int i = 0; i < n; i++) { dx[i] = 0.0; dout[i] = 1.0 + i; }
    __enzyme_autodiff((void *)hadamard, x, dx, enzyme_const, y, out, dout, n);
    for (int i = 0; i < n; i++) {
        check("hadamard dx (out unmarked)", i, dx[i], (1.0 + i) * y[i], TOL);
        check("hadamard dout zeroed", i, dout[i], 0.0, TOL);
        check("hadamard primal", i, out[i], x[i] * y[i], TOL);
    }
    for (int i = 0; i < n; i++) dout[i] = 0.0;
    __enzyme_fwddiff((void *)hadamard, x, tx, enzyme_dup, y, ty, out, dout, n);
    for (int i = 0; i < n; i++)
        check("hadamard forward (unmarked)", i, dout[i], tx[i] * y[i] + x[i] * ty[i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
