/* libm functions with piecewise constant or sign derivatives: fabs floor ceil round trunc rint lround. */
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

static double f_fabs(double x) { return fabs(x); }
static double f_floor(double x) { return floor(x); }
static double f_ceil(double x) { return ceil(x); }
static double f_round(double x) { return round(x); }
static double f_trunc(double x) { return trunc(x); }
static double f_rint(double x) { return rint(x); }
/* combinations whose derivative is not zero */
static double f_xfloor(double x) { return x * floor(x); }         /* d = floor(x) */
static double f_fracsq(double x) { double r = x - trunc(x); return r * r; } /* d = 2 (x - trunc x) */
static double f_absx(double x) { return fabs(x) * x; }            /* d = 2 |x| */
static double f_sinround(double x) { return sin(x) + round(x) * ceil(x) + rint(x); } /* d = cos x */

static double d_fabs(double x) { return x > 0 ? 1.0 : -1.0; }
static double d_floor(double x) { (void)x; return 0.0; }
static double d_ceil(double x) { (void)x; return 0.0; }
static double d_round(double x) { (void)x; return 0.0; }
static double d_trunc(double x) { (void)x; return 0.0; }
static double d_rint(double x) { (void)x; return 0.0; }
static double d_xfloor(double x) { return floor(x); }
static double d_fracsq(double x) { return 2.0 * (x - trunc(x)); }
static double d_absx(double x) { return 2.0 * fabs(x); }
static double d_sinround(double x) { return cos(x); }

#define TEST(fn, x)                                                                  \
    do {                                                                             \
        check(#fn " reverse", x, __enzyme_autodiff((void *)f_##fn, x), d_##fn(x), TOL); \
        check(#fn " forward", x, __enzyme_fwddiff((void *)f_##fn, x, 1.0), d_##fn(x), TOL); \
    } while (0)

int main(void) {
    /* no integers and no halves: every function is differentiable there */
    static const double xs[] = {-2.7, -1.2, -0.3, 0.2, 0.8, 1.4, 3.9};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        TEST(fabs, x);
        TEST(floor, x);
        TEST(ceil, x);
        TEST(round, x);
        TEST(trunc, x);
        TEST(rint, x);
        TEST(xfloor, x);
        TEST(fracsq, x);
        TEST(absx, x);
        TEST(sinround, x);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
