/* fma and other three-argument functions: a 3-field derivative struct returned via sret. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* Three active doubles: a 24-byte struct, returned through a hidden sret pointer on x86-64. */
typedef struct { double dx, dy, dz; } grad3;
extern grad3 __enzyme_autodiff3(void *, double, double, double);

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

static double f_fma(double x, double y, double z) { return fma(x, y, z); }
static double f_trilinear(double x, double y, double z) { return x * y * z + sin(z) - x / y; }
static double f_dist(double x, double y, double z) { return sqrt(x * x + y * y + z * z); }

static void test(double x, double y, double z) {
    grad3 g = __enzyme_autodiff3((void *)f_fma, x, y, z);
    check("fma d/dx", x, g.dx, y, TOL);
    check("fma d/dy", x, g.dy, x, TOL);
    check("fma d/dz", x, g.dz, 1.0, TOL);
    check("fma forward", x, __enzyme_fwddiff((void *)f_fma, x, 1.0, y, 2.0, z, 3.0),
          y + 2.0 * x + 3.0, TOL);

    g = __enzyme_autodiff3((void *)f_trilinear, x, y, z);
    check("trilinear d/dx", x, g.dx, y * z - 1.0 / y, TOL);
    check("trilinear d/dy", x, g.dy, x * z + x / (y * y), TOL);
    check("trilinear d/dz", x, g.dz, x * y + cos(z), TOL);
    check("trilinear forward", x, __enzyme_fwddiff((void *)f_trilinear, x, 0.0, y, 0.0, z, 1.0),
          x * y + cos(z), TOL);

    double r = sqrt(x * x + y * y + z * z);
    g = __enzyme_autodiff3((void *)f_dist, x, y, z);
    check("dist d/dx", x, g.dx, x / r, TOL);
    check("dist d/dy", x, g.dy, y / r, TOL);
    check("dist d/dz", x, g.dz, z / r, TOL);
    check("dist forward", x, __enzyme_fwddiff((void *)f_dist, x, x, y, y, z, z), r, TOL);
}

int main(void) {
    static const double pts[][3] = {{1.0, 2.0, 3.0}, {-0.5, 0.25, 4.0}, {2.5, -1.5, -0.75}};
    for (unsigned i = 0; i < sizeof pts / sizeof pts[0]; i++)
        test(pts[i][0], pts[i][1], pts[i][2]);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
