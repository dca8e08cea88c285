/* Series sums in loops with run-time term counts: exp, sin and geometric series, a running-term recurrence. */
#include <stdio.h>
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

#define TOL 1e-9

/* sum_{k<n} x^k / k!, each term from the previous one */
static double exp_series(double x, int n) {
    double s = 0.0, t = 1.0;
    for (int k = 0; k < n; k++) {
        s += t;
        t *= x / (k + 1);
    }
    return s;
}
/* d/dx of the partial sum: sum_{1<=k<n} x^(k-1) / (k-1)! */
static double d_exp_series(double x, int n) {
    double d = 0.0;
    for (int k = 1; k < n; k++) {
        double f = 1.0;
        for (int j = 2; j < k; j++)
            f *= j;
        d += pow(x, k - 1) / f;
    }
    return d;
}

/* sum_{k<n} (-1)^k x^(2k+1) / (2k+1)! */
static double sin_series(double x, int n) {
    double s = 0.0, t = x;
    for (int k = 0; k < n; k++) {
        s += t;
        t *= -x * x / ((2 * k + 2) * (2 * k + 3));
    }
    return s;
}
static double d_sin_series(double x, int n) {
    double d = 0.0;
    for (int k = 0; k < n; k++) {
        double f = 1.0;
        for (int j = 2; j <= 2 * k; j++)
            f *= j;
        d += (k % 2 ? -1.0 : 1.0) * pow(x, 2 * k) / f;
    }
    return d;
}

/* sum_{k<n} x^k, with the power kept in a separate accumulator */
static double geometric(double x, int n) {
    double s = 0.0, p = 1.0;
    for (int k = 0; k < n; k++) {
        s += p;
        p *= x;
    }
    return s;
}
static double d_geometric(double x, int n) {
    double d = 0.0;
    for (int k = 1; k < n; k++)
        d += k * pow(x, k - 1);
    return d;
}

int main(int argc, char **argv) {
    (void)argv;
    int nmax = 18 + argc; /* known only at run time */
    static const double xs[] = {-2.0, -0.6, 0.25, 1.0, 1.8};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        for (int n = 1; n <= nmax; n += 6) {
            check("exp_series reverse", x, __enzyme_autodiff((void *)exp_series, x, n), d_exp_series(x, n), TOL);
            check("exp_series forward", x, __enzyme_fwddiff((void *)exp_series, x, 1.0, n), d_exp_series(x, n), TOL);
            check("sin_series reverse", x, __enzyme_autodiff((void *)sin_series, x, n), d_sin_series(x, n), TOL);
            check("sin_series forward", x, __enzyme_fwddiff((void *)sin_series, x, 1.0, n), d_sin_series(x, n), TOL);
            check("geometric reverse", x, __enzyme_autodiff((void *)geometric, x, n), d_geometric(x, n), TOL);
            check("geometric forward", x, __enzyme_fwddiff((void *)geometric, x, 1.0, n), d_geometric(x, n), TOL);
        }
        /* with enough terms the series derivatives approach exp and cos */
        check("exp_series -> exp", x, __enzyme_autodiff((void *)exp_series, x, 40), exp(x), TOL);
        check("sin_series -> cos", x, __enzyme_autodiff((void *)sin_series, x, 30), cos(x), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
