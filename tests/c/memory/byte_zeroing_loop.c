/* Doubles zeroed byte by byte through an unsigned char pointer (a hand-written memset), then partly refilled: the zeroed doubles' derivatives must go (at -O0 they stayed, session 31); reverse and forward. */
#include <stdio.h>
#include <stdlib.h>
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

static void zero_bytes(void *p, size_t nbytes) {
    unsigned char *b = p;
    for (size_t i = 0; i < nbytes; i++)
        b[i] = 0;
}

/* a_i = x_i^2; a[k..k+m) zeroed bytewise; a[k+1] = x[k+1]; f = sum (i+1) a_i */
static double f(const double *x, int n, int k, int m) {
    double *a = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        a[i] = x[i] * x[i];
    zero_bytes(a + k, m * sizeof(double));
    a[k + 1] = x[k + 1];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (i + 1) * a[i];
    free(a);
    return s;
}

static double want_partial(const double *x, int i, int k, int m) {
    if (i == k + 1)
        return i + 1;
    if (i >= k && i < k + m)
        return 0.0;
    return 2.0 * (i + 1) * x[i];
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 6 + argc, k = argc, m = 2 + argc;  /* 7, 1, 3 */
    double x[16], dx[16] = {0}, t[16];
    for (int i = 0; i < n; i++)
        x[i] = 0.4 + 0.3 * i - 0.05 * i * i;
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, k, enzyme_const, m);
    for (int i = 0; i < n; i++)
        check("rev d/dx_i", i, dx[i], want_partial(x, i, k, m), TOL);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++)
            t[j] = j == i;
        double d = __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, n, enzyme_const, k, enzyme_const, m);
        check("fwd d/dx_i", i, d, want_partial(x, i, k, m), TOL);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
