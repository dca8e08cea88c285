/* 1-D valid convolution y = x * k into an *out array and a correlation energy, signal and kernel both dup'd (kernel also const): reverse with seeded output (zeroed), forward. */
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

/* y_i = sum_j k_j x_{i+j}, i = 0 .. n-m */
static void conv(const double *x, int n, const double *k, int m, double *y) {
    for (int i = 0; i + m <= n; i++) {
        double s = 0.0;
        for (int j = 0; j < m; j++)
            s += k[j] * x[i + j];
        y[i] = s;
    }
}

/* 1/2 sum y_i^2 with a malloc'd y */
static double conv_energy(const double *x, int n, const double *k, int m) {
    double *y = malloc((n - m + 1) * sizeof(double));
    conv(x, n, k, m, y);
    double e = 0.0;
    for (int i = 0; i + m <= n; i++)
        e += 0.5 * y[i] * y[i];
    free(y);
    return e;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 11, m = argc + 2, ny = n - m + 1; /* 12, 3, 10 */
    double x[NMAX], dx[NMAX], tx[NMAX], k[NMAX], dk[NMAX], tk[NMAX], y[NMAX], dy[NMAX], w[NMAX];
    for (int i = 0; i < n; i++) { x[i] = sin(0.9 * i) + 0.1 * i; tx[i] = 0.3 - 0.05 * i; }
    for (int j = 0; j < m; j++) { k[j] = 0.5 - 0.4 * j; tk[j] = 0.2 * (j + 1); }
    for (int i = 0; i < ny; i++) w[i] = 1.0 + 0.1 * i;

    for (int mode = 0; mode < 2; mode++) {
        double *ws = mode ? y : w; /* mode 1: seeds are y itself, from conv_energy */
        if (mode) conv(x, n, k, m, y);
        for (int i = 0; i < n; i++) dx[i] = 0.0;
        for (int j = 0; j < m; j++) dk[j] = 0.0;
        for (int i = 0; i < ny; i++) dy[i] = w[i];
        if (mode == 0)
            __enzyme_autodiff((void *)conv, enzyme_dup, x, dx, n, enzyme_dup, k, dk, m, enzyme_dup, y, dy);
        else
            __enzyme_autodiff((void *)conv_energy, enzyme_dup, x, dx, n, enzyme_dup, k, dk, m);
        for (int p = 0; p < n; p++) {
            double want = 0.0;
            for (int j = 0; j < m; j++)
                if (p - j >= 0 && p - j < ny) want += ws[p - j] * k[j];
            check(mode ? "conv_energy dx" : "conv dx", p, dx[p], want, TOL);
        }
        for (int j = 0; j < m; j++) {
            double want = 0.0;
            for (int i = 0; i < ny; i++) want += ws[i] * x[i + j];
            check(mode ? "conv_energy dk" : "conv dk", j, dk[j], want, TOL);
        }
        if (mode == 0)
            for (int i = 0; i < ny; i++) check("conv dy zeroed", i, dy[i], 0.0, TOL);
    }
    /* forward: ty = conv(tx, k) + conv(x, tk); kernel const: conv(tx, k) */
    for (int i = 0; i < ny; i++) dy[i] = 0.0;
    __enzyme_fwddiff((void *)conv, enzyme_dup, x, tx, n, enzyme_dup, k, tk, m, enzyme_dup, y, dy);
    double fwd = 0.0;
    for (int i = 0; i < ny; i++) {
        double want = 0.0, yi = 0.0;
        for (int j = 0; j < m; j++) { want += k[j] * tx[i + j] + tk[j] * x[i + j]; yi += k[j] * x[i + j]; }
        check("conv forward", i, dy[i], want, TOL);
        fwd += yi * want;
    }
    check("conv_energy forward", n, __enzyme_fwddiff((void *)conv_energy, enzyme_dup, x, tx, n, enzyme_dup, k, tk, m), fwd, TOL);
    for (int i = 0; i < ny; i++) dy[i] = 0.0;
    __enzyme_fwddiff((void *)conv, enzyme_dup, x, tx, n, enzyme_const, k, m, enzyme_dup, y, dy);
    for (int i = 0; i < ny; i++) {
        double want = 0.0;
        for (int j = 0; j < m; j++) want += k[j] * tx[i + j];
        check("conv forward (k const)", i, dy[i], want, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
