/* Doubles overwritten through uint32_t and uint64_t pointers in callees taking void * (hand-written memsets, one storing the bits of 1.0), then read back: their old derivatives must go (at -O0 the uint32_t loop left them in the shadow, session 32); reverse and forward. */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
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

__attribute__((noinline)) static void zero_words(void *p, int nwords) {
    uint32_t *w = p;
    for (int i = 0; i < nwords; i++)
        w[i] = 0;
}

__attribute__((noinline)) static void fill_ones(void *p, int n) {
    uint64_t *w = p;
    for (int i = 0; i < n; i++)
        w[i] = 0x3FF0000000000000ull;  /* the bits of 1.0 */
}

/* a_i = sin x_i; s = sum a_i x_i; a[k..k+m) zeroed by words, a[k+m..n) set to 1.0 by
   their bits; s += sum (a_i + 1) x_i */
static double f(const double *x, int n, int k, int m) {
    double *a = malloc(n * sizeof(double));
    double s = 0.0;
    for (int i = 0; i < n; i++)
        a[i] = sin(x[i]);
    for (int i = 0; i < n; i++)
        s += a[i] * x[i];
    zero_words(a + k, 2 * m);
    fill_ones(a + k + m, n - k - m);
    for (int i = 0; i < n; i++)
        s += (a[i] + 1.0) * x[i];
    free(a);
    return s;
}

static double want_partial(const double *x, int i, int k, int m) {
    double first = cos(x[i]) * x[i] + sin(x[i]);
    if (i < k)
        return 2.0 * first + 1.0;
    if (i < k + m)
        return first + 1.0;
    return first + 2.0;
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
