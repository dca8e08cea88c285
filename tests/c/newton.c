/* Newton iterations with run-time iteration counts: square root, cube root, and an implicit equation checked by the implicit function theorem. */
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

static double newton_sqrt(double a, int iters) {
    double y = a > 1.0 ? a : 1.0;
    for (int i = 0; i < iters; i++)
        y = 0.5 * (y + a / y);
    return y;
}

static double newton_cbrt(double a, int iters) {
    double y = a > 1.0 ? a : 1.0;
    for (int i = 0; i < iters; i++)
        y = y - (y * y * y - a) / (3.0 * y * y);
    return y;
}

/* the solution y(a) of y = cos(a y) */
static double fixed_point(double a, int iters) {
    double y = 0.5;
    for (int i = 0; i < iters; i++)
        y = y - (y - cos(a * y)) / (1.0 + a * sin(a * y));
    return y;
}
/* implicit function theorem: F(y, a) = y - cos(a y) = 0  =>  dy/da = -F_a / F_y */
static double d_fixed_point(double a, double y) {
    return -(y * sin(a * y)) / (1.0 + a * sin(a * y));
}

int main(int argc, char **argv) {
    (void)argv;
    int iters = 39 + argc; /* 40, known only at run time */
    static const double as[] = {0.25, 0.9, 2.0, 10.0, 1234.5};
    for (unsigned i = 0; i < sizeof as / sizeof as[0]; i++) {
        double a = as[i];
        check("newton_sqrt value", a, newton_sqrt(a, iters), sqrt(a), TOL);
        check("newton_sqrt reverse", a, __enzyme_autodiff((void *)newton_sqrt, a, iters), 0.5 / sqrt(a), TOL);
        check("newton_sqrt forward", a, __enzyme_fwddiff((void *)newton_sqrt, a, 1.0, iters), 0.5 / sqrt(a), TOL);
        double c = cbrt(a);
        check("newton_cbrt value", a, newton_cbrt(a, iters), c, TOL);
        check("newton_cbrt reverse", a, __enzyme_autodiff((void *)newton_cbrt, a, iters), 1.0 / (3.0 * c * c), TOL);
        check("newton_cbrt forward", a, __enzyme_fwddiff((void *)newton_cbrt, a, 1.0, iters), 1.0 / (3.0 * c * c), TOL);
    }
    static const double bs[] = {0.5, 0.8, 1.0, 1.3};
    for (unsigned i = 0; i < sizeof bs / sizeof bs[0]; i++) {
        double a = bs[i];
        double y = fixed_point(a, iters);
        check("fixed_point residual", a, y - cos(a * y), 0.0, TOL);
        check("fixed_point reverse", a, __enzyme_autodiff((void *)fixed_point, a, iters), d_fixed_point(a, y), TOL);
        check("fixed_point forward", a, __enzyme_fwddiff((void *)fixed_point, a, 1.0, iters), d_fixed_point(a, y), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
