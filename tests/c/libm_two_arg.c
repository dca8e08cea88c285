/* libm two-argument functions (double), both arguments active: atan2 hypot copysign fmin fmax fdim remainder. */
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

static double f_atan2(double y, double x) { return atan2(y, x); }
static double f_hypot(double x, double y) { return hypot(x, y); }
static double f_copysign(double x, double y) { return copysign(x, y); }
static double f_fmin(double x, double y) { return fmin(x, y); }
static double f_fmax(double x, double y) { return fmax(x, y); }
static double f_fdim(double x, double y) { return fdim(x, y); }
static double f_remainder(double x, double y) { return remainder(x, y); }
/* a smooth combination of all of them */
static double f_mix(double x, double y) { return hypot(x, y) * atan2(y, x) + fmax(x, y) * fmin(x, y); }

static double sign(double v) { return copysign(1.0, v); }

static void test(double a, double b) {
    grad2 g;
    double r2 = a * a + b * b;

    g = __enzyme_autodiff2((void *)f_atan2, a, b); /* atan2(y=a, x=b) */
    check("atan2 d/dy", a, g.dx, b / r2, TOL);
    check("atan2 d/dx", a, g.dy, -a / r2, TOL);
    check("atan2 forward", a, __enzyme_fwddiff((void *)f_atan2, a, 1.0, b, 2.0),
          b / r2 - 2.0 * a / r2, TOL);

    g = __enzyme_autodiff2((void *)f_hypot, a, b);
    check("hypot d/dx", a, g.dx, a / sqrt(r2), TOL);
    check("hypot d/dy", a, g.dy, b / sqrt(r2), TOL);
    check("hypot forward", a, __enzyme_fwddiff((void *)f_hypot, a, -1.0, b, 0.5),
          (-a + 0.5 * b) / sqrt(r2), TOL);

    g = __enzyme_autodiff2((void *)f_copysign, a, b);
    check("copysign d/dx", a, g.dx, sign(a) * sign(b), TOL);
    check("copysign d/dy", a, g.dy, 0.0, TOL);
    check("copysign forward", a, __enzyme_fwddiff((void *)f_copysign, a, 1.0, b, 1.0),
          sign(a) * sign(b), TOL);

    g = __enzyme_autodiff2((void *)f_fmin, a, b);
    check("fmin d/dx", a, g.dx, a < b ? 1.0 : 0.0, TOL);
    check("fmin d/dy", a, g.dy, a < b ? 0.0 : 1.0, TOL);
    check("fmin forward", a, __enzyme_fwddiff((void *)f_fmin, a, 3.0, b, 5.0),
          a < b ? 3.0 : 5.0, TOL);

    g = __enzyme_autodiff2((void *)f_fmax, a, b);
    check("fmax d/dx", a, g.dx, a > b ? 1.0 : 0.0, TOL);
    check("fmax d/dy", a, g.dy, a > b ? 0.0 : 1.0, TOL);
    check("fmax forward", a, __enzyme_fwddiff((void *)f_fmax, a, 3.0, b, 5.0),
          a > b ? 3.0 : 5.0, TOL);

    g = __enzyme_autodiff2((void *)f_fdim, a, b);
    check("fdim d/dx", a, g.dx, a > b ? 1.0 : 0.0, TOL);
    check("fdim d/dy", a, g.dy, a > b ? -1.0 : 0.0, TOL);
    check("fdim forward", a, __enzyme_fwddiff((void *)f_fdim, a, 3.0, b, 5.0), a > b ? -2.0 : 0.0, TOL);

    /* remainder(a, 0.37 b) = a - n 0.37 b, n = a / (0.37 b) rounded to nearest (no point sits on a jump) */
    double n = rint(a / (0.37 * b));
    g = __enzyme_autodiff2((void *)f_remainder, a, 0.37 * b);
    check("remainder d/dx", a, g.dx, 1.0, TOL);
    check("remainder d/dy", a, g.dy, -n, TOL);
    check("remainder forward", a, __enzyme_fwddiff((void *)f_remainder, a, 3.0, 0.37 * b, 5.0), 3.0 - 5.0 * n, TOL);

    double h = sqrt(r2), t = atan2(b, a), mx = fmax(a, b), mn = fmin(a, b);
    double dmx_da = a > b, dmn_da = a < b;
    double dmix_da = a / h * t + h * (-b / r2) + dmx_da * mn + mx * dmn_da;
    double dmix_db = b / h * t + h * (a / r2) + (1.0 - dmx_da) * mn + mx * (1.0 - dmn_da);
    g = __enzyme_autodiff2((void *)f_mix, a, b);
    check("mix d/dx", a, g.dx, dmix_da, TOL);
    check("mix d/dy", a, g.dy, dmix_db, TOL);
    check("mix forward", a, __enzyme_fwddiff((void *)f_mix, a, 1.0, b, -1.0),
          dmix_da - dmix_db, TOL);
}

int main(void) {
    static const double pts[][2] = {{1.0, 2.0}, {-0.5, 0.25}, {3.0, -4.0}, {-2.0, -1.5}, {0.7, 0.6}};
    for (unsigned i = 0; i < sizeof pts / sizeof pts[0]; i++)
        test(pts[i][0], pts[i][1]);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
