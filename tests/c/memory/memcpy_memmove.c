/* memcpy and memmove on active data: copying into a malloc'd buffer and shifting it with an overlapping memmove, a rotation in place, copying an input to an *out parameter; reverse and forward. */
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

/* b = [1/2, x_0, ..., x_{n-1}] via memcpy then an overlapping memmove; sum (i + 1) b_i^2 */
static double shift_sum(const double *x, int n) {
    double *b = malloc((n + 1) * sizeof(double));
    memcpy(b, x, n * sizeof(double));
    memmove(b + 1, b, n * sizeof(double));
    b[0] = 0.5;
    double r = 0.0;
    for (int i = 0; i <= n; i++)
        r += (i + 1) * b[i] * b[i];
    free(b);
    return r;
}

/* rotate right by one, in place: an overlapping memmove to a higher address */
static void rotate(double *x, int n) {
    double last = x[n - 1];
    memmove(x + 1, x, (n - 1) * sizeof(double));
    x[0] = last;
}

/* out = x (memcpy), then out_i *= x_i */
static void square_copy(const double *x, double *out, int n) {
    memcpy(out, x, n * sizeof(double));
    for (int i = 0; i < n; i++)
        out[i] *= x[i];
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8; /* 9 */
    double x0[NMAX], x[NMAX], dx[NMAX], t[NMAX], w[NMAX], out[NMAX], dout[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = sin(1.4 * i) - 0.1 * i;
        t[i] = 0.25 * (i % 3) - 0.3;
        w[i] = 1.0 + 0.5 * i;
    }
    /* r = 1/4 + sum (i + 2) x_i^2 */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)shift_sum, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("shift_sum dx", i, dx[i], 2.0 * (i + 2) * x0[i], TOL);
        fwd += 2.0 * (i + 2) * x0[i] * t[i];
    }
    check("shift_sum forward", n, __enzyme_fwddiff((void *)shift_sum, enzyme_dup, x, t, n), fwd, TOL);

    /* rotation: y_0 = x_{n-1}, y_i = x_{i-1}; seeds w on y give dx_j = w_{j+1}, dx_{n-1} = w_0 */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = w[i]; }
    __enzyme_autodiff((void *)rotate, enzyme_dup, x, dx, n);
    for (int j = 0; j < n; j++) {
        check("rotate dx", j, dx[j], w[(j + 1) % n], TOL);
        check("rotate primal", j, x[j], x0[(j + n - 1) % n], TOL);
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    __enzyme_fwddiff((void *)rotate, enzyme_dup, x, dx, n);
    for (int j = 0; j < n; j++)
        check("rotate forward", j, dx[j], t[(j + n - 1) % n], TOL);

    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; dout[i] = w[i]; }
    __enzyme_autodiff((void *)square_copy, enzyme_dup, x, dx, enzyme_dup, out, dout, n);
    for (int i = 0; i < n; i++) {
        check("square_copy dx", i, dx[i], 2.0 * x0[i] * w[i], TOL);
        check("square_copy dout zeroed", i, dout[i], 0.0, TOL);
        check("square_copy primal", i, out[i], x0[i] * x0[i], TOL);
    }
    for (int i = 0; i < n; i++) dout[i] = 0.0;
    __enzyme_fwddiff((void *)square_copy, enzyme_dup, x, t, enzyme_dup, out, dout, n);
    for (int i = 0; i < n; i++)
        check("square_copy forward", i, dout[i], 2.0 * x0[i] * t[i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
