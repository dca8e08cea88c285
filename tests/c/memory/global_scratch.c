/* Static global arrays and a global double used as scratch, written with active data inside the differentiated function (and a global int counter that stays inactive): reverse and forward. */
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

static double scratch[64];
static double total;
static int calls;

/* g_i = x_i^2 in scratch, s_i = g_i + s_{i-1} / 2 in place; return sum s_i x_i */
static double with_scratch(const double *x, int n) {
    calls++;
    for (int i = 0; i < n; i++)
        scratch[i] = x[i] * x[i];
    for (int i = 1; i < n; i++)
        scratch[i] += 0.5 * scratch[i - 1];
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += scratch[i] * x[i];
    return r;
}

/* total = sum sin(x_i); return total^2 */
static double global_total(const double *x, int n) {
    total = 0.0;
    for (int i = 0; i < n; i++)
        total += sin(x[i]);
    return total * total;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 9; /* 10 */
    double x[NMAX], dx[NMAX], t[NMAX], s[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.5 * cos(1.9 * i) + 0.3;
        t[i] = 0.2 * (i % 3) - 0.1;
    }
    for (int i = 0; i < n; i++) s[i] = x[i] * x[i] + (i > 0 ? 0.5 * s[i - 1] : 0.0);

    /* d/dx_j = s_j + 2 x_j sum_{i >= j} 2^-(i-j) x_i */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)with_scratch, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int j = 0; j < n; j++) {
        double tail = 0.0;
        for (int i = j; i < n; i++) tail += pow(0.5, i - j) * x[i];
        double want = s[j] + 2.0 * x[j] * tail;
        check("with_scratch dx", j, dx[j], want, TOL);
        check("global scratch holds the primal", j, scratch[j], s[j], TOL);
        fwd += want * t[j];
    }
    check("with_scratch forward", n, __enzyme_fwddiff((void *)with_scratch, enzyme_dup, x, t, n), fwd, TOL);
    check("with_scratch ran (int global)", 0, calls >= 2, 1.0, 0.0);

    double S = 0.0;
    for (int i = 0; i < n; i++) S += sin(x[i]);
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)global_total, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("global_total dx", i, dx[i], 2.0 * S * cos(x[i]), TOL);
        fwd += 2.0 * S * cos(x[i]) * t[i];
    }
    check("global_total forward", n, __enzyme_fwddiff((void *)global_total, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
