/* libm roots and powers (double): sqrt cbrt pow (base, exponent and both active) __builtin_powi. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* Several active doubles: Enzyme returns their derivatives as a struct, in argument order.
   A second prototype needs a second name; any name containing __enzyme_autodiff works. */
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);

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

static double f_sqrt(double x) { return sqrt(x); }
static double f_cbrt(double x) { return cbrt(x); }
static double f_pow25(double x) { return pow(x, 2.5); }        /* constant exponent */
static double f_pow3x(double x) { return pow(3.0, x); }        /* constant base */
static double f_pow(double x, double y) { return pow(x, y); }  /* both active */
static double f_powi(double x, int n) { return __builtin_powi(x, n); }
static double f_norm(double x) { return sqrt(x * x + 1.0); }

static double d_sqrt(double x) { return 0.5 / sqrt(x); }
static double d_cbrt(double x) { return 1.0 / (3.0 * cbrt(x) * cbrt(x)); }
static double d_pow25(double x) { return 2.5 * pow(x, 1.5); }
static double d_pow3x(double x) { return pow(3.0, x) * log(3.0); }
static double d_norm(double x) { return x / sqrt(x * x + 1.0); }

#define TEST(fn, x)                                                                  \
    do {                                                                             \
        check(#fn " reverse", x, __enzyme_autodiff((void *)f_##fn, x), d_##fn(x), TOL); \
        check(#fn " forward", x, __enzyme_fwddiff((void *)f_##fn, x, 1.0), d_##fn(x), TOL); \
    } while (0)

int main(void) {
    static const double xs[] = {0.04, 0.5, 2.0, 7.3};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        TEST(sqrt, x);
        TEST(cbrt, x);
        TEST(cbrt, -x);
        TEST(pow25, x);
        TEST(pow3x, x);
        TEST(pow3x, -x);
        TEST(norm, x);
        TEST(norm, -x);

        static const double ys[] = {-1.5, 0.5, 3.0};
        for (unsigned j = 0; j < 3; j++) {
            double y = ys[j];
            grad2 g = __enzyme_autodiff2((void *)f_pow, x, y);
            check("pow d/dx reverse", x, g.dx, y * pow(x, y - 1.0), TOL);
            check("pow d/dy reverse", x, g.dy, pow(x, y) * log(x), TOL);
            check("pow forward (1, 0)", x, __enzyme_fwddiff((void *)f_pow, x, 1.0, y, 0.0),
                  y * pow(x, y - 1.0), TOL);
            check("pow forward (0.5, -2)", x, __enzyme_fwddiff((void *)f_pow, x, 0.5, y, -2.0),
                  0.5 * y * pow(x, y - 1.0) - 2.0 * pow(x, y) * log(x), TOL);
        }

        static const int ns[] = {-3, 0, 1, 2, 5};
        for (unsigned j = 0; j < 5; j++) {
            int n = ns[j];
            double want = n == 0 ? 0.0 : n * pow(x, n - 1);
            check("powi reverse", x, __enzyme_autodiff((void *)f_powi, x, n), want, TOL);
            check("powi forward", x, __enzyme_fwddiff((void *)f_powi, x, 1.0, n), want, TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
