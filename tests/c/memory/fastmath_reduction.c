/* Long reductions that -ffast-math may reassociate and vectorize (sum of squares, mean and variance, a float sum, a sum of exponentials) over a thousand elements: reverse and forward. */
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

#define FTOL 1e-4

extern float __enzyme_fwddiff_f(void *, ...);

static double sumsq(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

static double variance(const double *x, int n) {
    double m = 0.0;
    for (int i = 0; i < n; i++)
        m += x[i];
    m /= n;
    double v = 0.0;
    for (int i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m);
    return v / n;
}

static double sumexp(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += exp(x[i]);
    return s;
}

static float fsum_scaled(const float *x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += 0.5f * x[i];
    return s;
}

#define NMAX 2048

int main(int argc, char **argv) {
    (void)argv;
    int n = 1000 + argc; /* 1001 */
    static double x[NMAX], dx[NMAX], t[NMAX];
    static float xf[NMAX], dxf[NMAX], tf[NMAX];
    double m = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = sin(0.37 * i) + 0.001 * i;
        t[i] = cos(0.11 * i);
        xf[i] = (float)x[i];
        tf[i] = (float)t[i];
        m += x[i] / n;
    }
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)sumsq, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i += 50) check("sumsq dx", i, dx[i], 2.0 * x[i], TOL);
    for (int i = 0; i < n; i++) fwd += 2.0 * x[i] * t[i];
    check("sumsq forward", n, __enzyme_fwddiff((void *)sumsq, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)variance, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i += 50) check("variance dx", i, dx[i], 2.0 * (x[i] - m) / n, TOL);
    fwd = 0.0;
    for (int i = 0; i < n; i++) fwd += 2.0 * (x[i] - m) / n * t[i];
    check("variance forward", n, __enzyme_fwddiff((void *)variance, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)sumexp, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i += 50) check("sumexp dx", i, dx[i], exp(x[i]), TOL);
    fwd = 0.0;
    for (int i = 0; i < n; i++) fwd += exp(x[i]) * t[i];
    check("sumexp forward", n, __enzyme_fwddiff((void *)sumexp, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) dxf[i] = 0.0f;
    __enzyme_autodiff((void *)fsum_scaled, enzyme_dup, xf, dxf, n);
    for (int i = 0; i < n; i += 50) check("fsum_scaled dx", i, dxf[i], 0.5, FTOL);
    fwd = 0.0;
    for (int i = 0; i < n; i++) fwd += 0.5 * tf[i];
    check("fsum_scaled forward", n, __enzyme_fwddiff_f((void *)fsum_scaled, enzyme_dup, xf, tf, n), fwd, 1e-3);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
