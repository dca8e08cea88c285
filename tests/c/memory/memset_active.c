/* memset on active memory: an *out parameter cleared then accumulated into, a scratch buffer partly cleared, an input cleared in place (its shadow is cleared too); reverse and forward. */
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

/* out_b = sum_{i % m == b} x_i^2 after memset(out, 0) */
static void fold(const double *x, int n, double *out, int m) {
    memset(out, 0, m * sizeof(double));
    for (int i = 0; i < n; i++)
        out[i % m] += x[i] * x[i];
}

/* buf = 3 x, its first half cleared; return sum buf_i x_i */
static double clear_half(const double *x, int n) {
    double *buf = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        buf[i] = 3.0 * x[i];
    memset(buf, 0, (n / 2) * sizeof(double));
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += buf[i] * x[i];
    free(buf);
    return r;
}

/* clears x[0..k) in place, then sum x_i^2 */
static double clear_prefix(double *x, int n, int k) {
    memset(x, 0, k * sizeof(double));
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += x[i] * x[i];
    return r;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10, m = argc + 2, k = argc + 2; /* 11 values, 3 bins, clear 3 */
    double x0[NMAX], x[NMAX], dx[NMAX], t[NMAX], out[NMAX], dout[NMAX], w[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = x[i] = 0.6 * sin(2.1 * i) + 0.2;
        t[i] = 0.1 * i - 0.4;
    }
    for (int b = 0; b < m; b++) { w[b] = 1.0 + b; out[b] = 123.0; }

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    for (int b = 0; b < m; b++) dout[b] = w[b];
    __enzyme_autodiff((void *)fold, enzyme_dup, x, dx, n, enzyme_dup, out, dout, m);
    for (int i = 0; i < n; i++)
        check("fold dx", i, dx[i], 2.0 * x[i] * w[i % m], TOL);
    for (int b = 0; b < m; b++)
        check("fold dout zeroed (memset)", b, dout[b], 0.0, TOL);
    for (int b = 0; b < m; b++) dout[b] = 7.0; /* a stale shadow is cleared by the forward memset */
    __enzyme_fwddiff((void *)fold, enzyme_dup, x, t, n, enzyme_dup, out, dout, m);
    for (int b = 0; b < m; b++) {
        double want = 0.0, prim = 0.0;
        for (int i = b; i < n; i += m) { want += 2.0 * x[i] * t[i]; prim += x[i] * x[i]; }
        check("fold forward", b, dout[b], want, TOL);
        check("fold primal", b, out[b], prim, TOL);
    }

    /* r = sum_{i >= n/2} 3 x_i^2 */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)clear_half, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = i < n / 2 ? 0.0 : 6.0 * x[i];
        check("clear_half dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("clear_half forward", n, __enzyme_fwddiff((void *)clear_half, enzyme_dup, x, t, n), fwd, TOL);

    /* shadow prefilled with 1: cleared entries end at 0, the others at 1 + 2 x_i */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 1.0; }
    __enzyme_autodiff((void *)clear_prefix, enzyme_dup, x, dx, n, k);
    for (int i = 0; i < n; i++) {
        check("clear_prefix dx", i, dx[i], i < k ? 0.0 : 1.0 + 2.0 * x0[i], TOL);
        check("clear_prefix primal", i, x[i], i < k ? 0.0 : x0[i], TOL);
    }
    fwd = 0.0;
    for (int i = k; i < n; i++) fwd += 2.0 * x0[i] * t[i];
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    check("clear_prefix forward", n, __enzyme_fwddiff((void *)clear_prefix, enzyme_dup, x, dx, n, k), fwd, TOL);
    for (int i = 0; i < k; i++)
        check("clear_prefix forward clears tangent", i, dx[i], 0.0, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
