/* Shadows accumulate (+=): repeated reverse calls, prefilled shadows, an in-place product y_i *= x_i (seed consumed, then re-created), y += A x keeping the output seed; forward mode sets rather than adds. */
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

static double wsq(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (i + 1) * x[i] * x[i];
    return s;
}

/* y_i <- y_i x_i */
static void mul_inplace(const double *x, double *y, int n) {
    for (int i = 0; i < n; i++)
        y[i] *= x[i];
}

/* y += A x, A m x n row-major */
static void gemv_acc(const double *A, const double *x, double *y, int m, int n) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            y[i] += A[i * n + j] * x[j];
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5, m = argc + 2; /* 6, 3 */
    double x[NMAX], dx[NMAX], y[NMAX], dy[NMAX], y0[NMAX], w[NMAX], A[NMAX * NMAX], t[NMAX], ty[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 1.0 - 0.3 * i;
        y0[i] = 0.5 + 0.2 * i;
        w[i] = 1.0 + 0.1 * i;
        t[i] = 0.4;
    }
    for (int k = 0; k < m * n; k++) A[k] = sin(0.5 * k);

    for (int i = 0; i < n; i++) dx[i] = 0.5;
    for (int r = 0; r < 3; r++)
        __enzyme_autodiff((void *)wsq, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("wsq three calls, prefilled 1/2", i, dx[i], 0.5 + 3.0 * 2.0 * (i + 1) * x[i], TOL);

    /* y_new = y x: seeds w on y give dy = w x (the old seed consumed), dx += w y_old */
    for (int i = 0; i < n; i++) { dx[i] = 1.0; y[i] = y0[i]; dy[i] = w[i]; }
    __enzyme_autodiff((void *)mul_inplace, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("mul_inplace dx", i, dx[i], 1.0 + w[i] * y0[i], TOL);
        check("mul_inplace dy", i, dy[i], w[i] * x[i], TOL);
    }
    /* forward: ty_new = ty x + y tx, replacing the old tangent */
    for (int i = 0; i < n; i++) { y[i] = y0[i]; ty[i] = 0.1 * i; }
    __enzyme_fwddiff((void *)mul_inplace, enzyme_dup, x, t, enzyme_dup, y, ty, n);
    for (int i = 0; i < n; i++)
        check("mul_inplace forward", i, ty[i], 0.1 * i * x[i] + y0[i] * t[i], TOL);

    /* y += A x: the seed on y stays (dy_out/dy_in = 1), dx += A^T w */
    for (int j = 0; j < n; j++) dx[j] = 0.0;
    for (int i = 0; i < m; i++) { y[i] = y0[i]; dy[i] = w[i]; }
    __enzyme_autodiff((void *)gemv_acc, enzyme_const, A, enzyme_dup, x, dx, enzyme_dup, y, dy, m, n);
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += A[i * n + j] * w[i];
        check("gemv_acc dx", j, dx[j], want, TOL);
    }
    for (int i = 0; i < m; i++) check("gemv_acc dy keeps its seed", i, dy[i], w[i], TOL);
    /* called twice: dx doubles, dy still the seed */
    __enzyme_autodiff((void *)gemv_acc, enzyme_const, A, enzyme_dup, x, dx, enzyme_dup, y, dy, m, n);
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += A[i * n + j] * w[i];
        check("gemv_acc dx twice", j, dx[j], 2.0 * want, TOL);
    }
    for (int i = 0; i < m; i++) ty[i] = 1.0;
    __enzyme_fwddiff((void *)gemv_acc, enzyme_const, A, enzyme_dup, x, t, enzyme_dup, y, ty, m, n);
    for (int i = 0; i < m; i++) {
        double want = 1.0;
        for (int j = 0; j < n; j++) want += A[i * n + j] * t[j];
        check("gemv_acc forward", i, ty[i], want, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
