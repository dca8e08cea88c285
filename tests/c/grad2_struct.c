/* Two active doubles with the plain name: "grad2 __enzyme_autodiff(void*, double, double)". */
#include <stdio.h>
#include <math.h>

typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff(void *, double, double);
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

static double rosenbrock(double x, double y) { return (1.0 - x) * (1.0 - x) + 100.0 * (y - x * x) * (y - x * x); }
static double product(double x, double y) { return x * y; }
static double polar_r(double x, double y) { return sqrt(x * x + y * y); }
static double gaussian(double x, double y) { return exp(-(x * x + 2.0 * y * y) / 2.0) * (x - y); }

static void test(double x, double y) {
    grad2 g = __enzyme_autodiff((void *)rosenbrock, x, y);
    double rx = -2.0 * (1.0 - x) - 400.0 * x * (y - x * x), ry = 200.0 * (y - x * x);
    check("rosenbrock d/dx", x, g.dx, rx, TOL);
    check("rosenbrock d/dy", x, g.dy, ry, TOL);
    check("rosenbrock forward", x, __enzyme_fwddiff((void *)rosenbrock, x, 1.0, y, 1.0), rx + ry, TOL);

    g = __enzyme_autodiff((void *)product, x, y);
    check("product d/dx", x, g.dx, y, TOL);
    check("product d/dy", x, g.dy, x, TOL);

    double r = sqrt(x * x + y * y);
    g = __enzyme_autodiff((void *)polar_r, x, y);
    check("polar_r d/dx", x, g.dx, x / r, TOL);
    check("polar_r d/dy", x, g.dy, y / r, TOL);

    double e = exp(-(x * x + 2.0 * y * y) / 2.0);
    double gx = e * (1.0 - x * (x - y)), gy = e * (-1.0 - 2.0 * y * (x - y));
    g = __enzyme_autodiff((void *)gaussian, x, y);
    check("gaussian d/dx", x, g.dx, gx, TOL);
    check("gaussian d/dy", x, g.dy, gy, TOL);
    check("gaussian forward", x, __enzyme_fwddiff((void *)gaussian, x, 0.5, y, -0.5), 0.5 * (gx - gy), TOL);
}

int main(void) {
    static const double pts[][2] = {{1.0, 1.0}, {-1.2, 1.0}, {0.5, -0.3}, {2.0, 3.5}};
    for (unsigned i = 0; i < sizeof pts / sizeof pts[0]; i++)
        test(pts[i][0], pts[i][1]);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
