/* libm hyperbolic functions, their inverses, erf and erfc (double): sinh cosh tanh asinh acosh atanh
   erf erfc. */
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

static double f_sinh(double x) { return sinh(x); }
static double f_cosh(double x) { return cosh(x); }
static double f_tanh(double x) { return tanh(x); }
static double f_erf(double x) { return erf(x); }
static double f_erfc(double x) { return erfc(x); }
static double f_asinh(double x) { return asinh(x); }
static double f_acosh(double x) { return acosh(1.5 + x * x); } /* acosh needs an argument above 1 */
static double f_atanh(double x) { return atanh(x / 4.0); }      /* and atanh one in (-1, 1) */
/* the standard normal CDF, written with erf */
static double f_normcdf(double x) { return 0.5 * (1.0 + erf(x / sqrt(2.0))); }

static double d_sinh(double x) { return cosh(x); }
static double d_cosh(double x) { return sinh(x); }
static double d_tanh(double x) { return 1.0 - tanh(x) * tanh(x); }
static double d_erf(double x) { return 2.0 / sqrt(3.14159265358979323846) * exp(-x * x); }
static double d_erfc(double x) { return -d_erf(x); }
static double d_asinh(double x) { return 1.0 / sqrt(x * x + 1.0); }
static double d_acosh(double x) { double u = 1.5 + x * x; return 2.0 * x / sqrt(u * u - 1.0); }
static double d_atanh(double x) { double u = x / 4.0; return 0.25 / (1.0 - u * u); }
static double d_normcdf(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846); }

#define TEST(fn, x)                                                                  \
    do {                                                                             \
        check(#fn " reverse", x, __enzyme_autodiff((void *)f_##fn, x), d_##fn(x), TOL); \
        check(#fn " forward", x, __enzyme_fwddiff((void *)f_##fn, x, 1.0), d_##fn(x), TOL); \
    } while (0)

int main(void) {
    static const double xs[] = {-3.0, -0.8, 0.0, 0.4, 1.1, 2.5};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        TEST(sinh, x);
        TEST(cosh, x);
        TEST(tanh, x);
        TEST(erf, x);
        TEST(erfc, x);
        TEST(asinh, x);
        TEST(acosh, x);
        TEST(atanh, x);
        TEST(normcdf, x);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
