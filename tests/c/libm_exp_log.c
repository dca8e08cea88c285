/* libm exponentials and logarithms (double): exp exp2 expm1 log log2 log10 log1p, and ldexp. */
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

static double f_exp(double x) { return exp(x); }
static double f_exp2(double x) { return exp2(x); }
static double f_expm1(double x) { return expm1(x); }
static double f_log(double x) { return log(x); }
static double f_log2(double x) { return log2(x); }
static double f_log10(double x) { return log10(x); }
static double f_log1p(double x) { return log1p(x); }
/* a composition: log(1 + exp(x)) (softplus), derivative 1 / (1 + exp(-x)) */
static double f_softplus(double x) { return log1p(exp(x)); }

static double d_exp(double x) { return exp(x); }
static double d_exp2(double x) { return exp2(x) * log(2.0); }
static double d_expm1(double x) { return exp(x); }
static double d_log(double x) { return 1.0 / x; }
static double d_log2(double x) { return 1.0 / (x * log(2.0)); }
static double d_log10(double x) { return 1.0 / (x * log(10.0)); }
static double d_log1p(double x) { return 1.0 / (1.0 + x); }
static double d_softplus(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_ldexp(double x) { return ldexp(x * x, 3) + ldexp(x, -2); } /* x^2 * 8 + x / 4 */
static double d_ldexp(double x) { return 16.0 * x + 0.25; }

#define TEST(fn, x)                                                                  \
    do {                                                                             \
        check(#fn " reverse", x, __enzyme_autodiff((void *)f_##fn, x), d_##fn(x), TOL); \
        check(#fn " forward", x, __enzyme_fwddiff((void *)f_##fn, x, 1.0), d_##fn(x), TOL); \
    } while (0)

int main(void) {
    static const double xs[] = {0.05, 0.3, 1.7, 4.2};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        TEST(exp, x);
        TEST(exp2, x);
        TEST(expm1, x);
        TEST(log, x);
        TEST(log2, x);
        TEST(log10, x);
        TEST(log1p, x);
        TEST(softplus, x);
        TEST(ldexp, x);
        /* negative arguments where the function is defined */
        TEST(exp, -x);
        TEST(exp2, -x);
        TEST(expm1, -x);
        TEST(softplus, -x);
        if (x < 1.0)
            TEST(log1p, -x);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
