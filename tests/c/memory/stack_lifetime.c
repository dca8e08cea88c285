/* Stack arrays whose values the reverse sweep reads after the primal's llvm.lifetime.end (issue 23
   item 1): an array cleared with memset and read in a loop, an array filled from x inside a block
   scope, a helper's local array (inlined), a scratch array declared inside a loop body; reverse
   and forward. At -O2/-O3 these gave NaN for every component before the markers were dropped from
   the forward sweep. */
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

/* t = 0: s = x0^2 */
static double cleared(const double *x, int n) {
    double t[16];
    memset(t, 0, sizeof t);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += t[i] * x[i];
    return s + x[0] * x[0];
}

/* t_i = x_i^2 in an inner scope, then s = sum t_i x_i = sum x_i^3 */
static double scoped(const double *x, int n) {
    double s = 0.0;
    {
        double t[16];
        for (int i = 0; i < n; i++)
            t[i] = x[i] * x[i];
        for (int i = 0; i < n; i++)
            s += t[i] * sin(x[i]);
    }
    return s;
}

/* a helper with a local array: sum_i c_i x_i with c_i = i + 1 stored on the stack */
static double weighted(const double *x, int n) {
    double c[16];
    for (int i = 0; i < n; i++)
        c[i] = i + 1.0;
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += c[i] * x[i] * x[i];
    return s;
}

static double calls_helper(const double *x, int n) {
    return weighted(x, n) * 0.5 + x[1];
}

/* each iteration fills a 2-entry scratch array, the product of its entries accumulates */
static double loop_scratch(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i + 1 < n; i++) {
        double w[2];
        w[0] = x[i];
        w[1] = x[i + 1] * 2.0;
        s += w[0] * w[1];
    }
    return s;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* 6 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) { x[i] = 0.3 + 0.2 * i - 0.05 * i * i; t[i] = 0.1 * i - 0.2; }

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)cleared, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("cleared dx", i, dx[i], i == 0 ? 2.0 * x[0] : 0.0, TOL);
    check("cleared forward", n, __enzyme_fwddiff((void *)cleared, enzyme_dup, x, t, n), 2.0 * x[0] * t[0], TOL);

    double fwd = 0.0;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)scoped, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        double want = 2.0 * x[i] * sin(x[i]) + x[i] * x[i] * cos(x[i]);
        check("scoped dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("scoped forward", n, __enzyme_fwddiff((void *)scoped, enzyme_dup, x, t, n), fwd, TOL);

    fwd = 0.0;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)calls_helper, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        double want = (i + 1.0) * x[i] + (i == 1 ? 1.0 : 0.0);
        check("calls_helper dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("calls_helper forward", n, __enzyme_fwddiff((void *)calls_helper, enzyme_dup, x, t, n), fwd, TOL);

    fwd = 0.0;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)loop_scratch, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        double want = (i + 1 < n ? 2.0 * x[i + 1] : 0.0) + (i > 0 ? 2.0 * x[i - 1] : 0.0);
        check("loop_scratch dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("loop_scratch forward", n, __enzyme_fwddiff((void *)loop_scratch, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
