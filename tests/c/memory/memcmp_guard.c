/* memcmp of active doubles as a guard (an integer result, no derivative): was refused as an opaque call (session 31); memcmp(..) == 0, which clang makes a bcmp, and the ordering result both; reverse and forward. */
#include <stdio.h>
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

/* a = x, b = 2x elementwise; when they differ, a[0..n/2) = b[0..n/2); f = sum (i+1) a_i^2,
   plus x_0 when memcmp orders a before b */
static double f(const double *x, int n) {
    double a[16], b[16];
    for (int i = 0; i < n; i++) {
        a[i] = x[i];
        b[i] = 2.0 * x[i];
    }
    double s = 0.0;
    if (memcmp(a, b, n * sizeof(double)) != 0)
        memcpy(a, b, (n / 2) * sizeof(double));
    if (memcmp(a + n - 1, b + n - 1, sizeof(double)) < 0)
        s += x[0];
    for (int i = 0; i < n; i++)
        s += (i + 1) * a[i] * a[i];
    return s;
}

static double want_partial(const double *x, int n, int i) {
    double w = (i < n / 2 ? 8.0 : 2.0) * (i + 1) * x[i];
    double last_a = x[n - 1], last_b = 2.0 * x[n - 1];
    if (memcmp(&last_a, &last_b, sizeof(double)) < 0 && i == 0)
        w += 1.0;
    return w;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 5 + argc;  /* 6 */
    double x[16], dx[16] = {0}, t[16];
    for (int i = 0; i < n; i++)
        x[i] = 0.7 + 0.2 * i;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++)
        check("rev d/dx_i", i, dx[i], want_partial(x, n, i), TOL);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            t[j] = j == i;
        check("fwd d/dx_i", i, __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, n), want_partial(x, n, i), TOL);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
