/* libm trigonometric functions (double): sin cos tan asin acos atan. */
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

static double f_sin(double x) { return sin(x); }
static double f_cos(double x) { return cos(x); }
static double f_tan(double x) { return tan(x); }
static double f_asin(double x) { return asin(x); }
static double f_acos(double x) { return acos(x); }
static double f_atan(double x) { return atan(x); }
/* sin(x) * cos(x) = sin(2x) / 2, derivative cos(2x) */
static double f_sincos(double x) { return sin(x) * cos(x); }

static double d_sin(double x) { return cos(x); }
static double d_cos(double x) { return -sin(x); }
static double d_tan(double x) { return 1.0 / (cos(x) * cos(x)); }
static double d_asin(double x) { return 1.0 / sqrt(1.0 - x * x); }
static double d_acos(double x) { return -1.0 / sqrt(1.0 - x * x); }
static double d_atan(double x) { return 1.0 / (1.0 + x * x); }
static double d_sincos(double x) { return cos(2.0 * x); }

#define TEST(fn, x)                                                                  \
    do {                                                                             \
        check(#fn " reverse", x, __enzyme_autodiff((void *)f_##fn, x), d_##fn(x), TOL); \
        check(#fn " forward", x, __enzyme_fwddiff((void *)f_##fn, x, 1.0), d_##fn(x), TOL); \
    } while (0)

int main(void) {
    static const double xs[] = {-2.0, -0.7, 0.0, 0.2, 0.9, 1.3, 4.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        TEST(sin, x);
        TEST(cos, x);
        TEST(tan, x);
        TEST(atan, x);
        TEST(sincos, x);
        if (fabs(x) < 1.0) {
            TEST(asin, x);
            TEST(acos, x);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
