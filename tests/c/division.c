/* Division and remainder: x/y, reciprocals, fmod (d/dy = -trunc(x/y)), remainder by a constant. */
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

static double f_div(double x, double y) { return x / y; }
static double f_recip(double x) { return 1.0 / x; }
static double f_rational(double x) { return (x * x - 1.0) / (x * x + 1.0); }
static double f_fmod(double x, double y) { return fmod(x, y); }
static double f_fmod_const(double x) { return fmod(x * x, 0.75); }
static double f_divmod(double x, double y) { return fmod(x, y) / y + x / (y * y); }

static void test(double x, double y) {
    grad2 g = __enzyme_autodiff2((void *)f_div, x, y);
    check("div d/dx", x, g.dx, 1.0 / y, TOL);
    check("div d/dy", x, g.dy, -x / (y * y), TOL);
    check("div forward", x, __enzyme_fwddiff((void *)f_div, x, 1.0, y, 1.0),
          1.0 / y - x / (y * y), TOL);

    check("recip reverse", x, __enzyme_autodiff((void *)f_recip, x), -1.0 / (x * x), TOL);
    check("recip forward", x, __enzyme_fwddiff((void *)f_recip, x, 1.0), -1.0 / (x * x), TOL);
    double q = x * x + 1.0;
    check("rational reverse", x, __enzyme_autodiff((void *)f_rational, x), 4.0 * x / (q * q), TOL);
    check("rational forward", x, __enzyme_fwddiff((void *)f_rational, x, 1.0), 4.0 * x / (q * q), TOL);

    double n = trunc(x / y);
    g = __enzyme_autodiff2((void *)f_fmod, x, y);
    check("fmod d/dx", x, g.dx, 1.0, TOL);
    check("fmod d/dy", x, g.dy, -n, TOL);
    check("fmod forward", x, __enzyme_fwddiff((void *)f_fmod, x, 2.0, y, 1.0), 2.0 - n, TOL);

    check("fmod const reverse", x, __enzyme_autodiff((void *)f_fmod_const, x), 2.0 * x, TOL);
    check("fmod const forward", x, __enzyme_fwddiff((void *)f_fmod_const, x, 1.0), 2.0 * x, TOL);

    double r = fmod(x, y);
    g = __enzyme_autodiff2((void *)f_divmod, x, y);
    check("divmod d/dx", x, g.dx, 1.0 / y + 1.0 / (y * y), TOL);
    check("divmod d/dy", x, g.dy, -n / y - r / (y * y) - 2.0 * x / (y * y * y), TOL);
}

int main(void) {
    /* x / y is never close to an integer, x * x is never close to a multiple of 0.75 */
    static const double pts[][2] = {{5.3, 1.25}, {-7.1, 2.2}, {0.4, 3.0}, {9.9, -0.7}, {-2.35, -0.55}};
    for (unsigned i = 0; i < sizeof pts / sizeof pts[0]; i++)
        test(pts[i][0], pts[i][1]);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
