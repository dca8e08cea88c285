/* Addresses as integers where no pointer is made from them: an alignment test, a distance in bytes, an address compare; the derivative must come through (a pointer made from such an integer is refused: tests/python/test_cli_errors.py). */
#include <stdint.h>
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

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

/* sum_i x_i^2 * (bytes spanned / 8), with a branch on the alignment of x and the order of two addresses */
static double weighted(const double *x, int n) {
    uintptr_t lo = (uintptr_t)x, hi = (uintptr_t)(x + n);
    double scale = (double)((hi - lo) / sizeof(double));
    if (lo % 8 != 0) return -1.0;          /* never: doubles are 8-aligned */
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i] * scale;
    if ((uintptr_t)&x[n - 1] > lo) s += x[n - 1];
    return s;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) { x[i] = 0.4 * i - 1.1; dx[i] = 0.0; t[i] = 0.0; }
    __enzyme_autodiff((void *)weighted, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        double want = 2.0 * x[i] * n + (i == n - 1);
        check("reverse d/dx_i", i, dx[i], want, TOL);
    }
    for (int i = 0; i < n; i++) {
        t[i] = 1.0;
        double got = __enzyme_fwddiff((void *)weighted, enzyme_dup, x, t, n);
        t[i] = 0.0;
        check("forward d/dx_i", i, got, 2.0 * x[i] * n + (i == n - 1), TOL);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
