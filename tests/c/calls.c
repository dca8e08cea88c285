/* Calls to helper functions: static and non-static, several levels deep, noinline, called twice, with int
   parameters, and a variadic one that only sees constants. */
#include <stdio.h>
#include <stdarg.h>
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

static double sq(double x) { return x * x; }
double cube(double x) { return sq(x) * x; }                      /* non-static */
static double level3(double x) { return sin(cube(x)) + sq(x); }
double level4(double x) { return level3(x) * exp(-sq(x)); }      /* four levels */

/* kept out of line at every level, so the derivative needs a call to a derivative */
__attribute__((noinline)) static double helper(double x) { return exp(x) / (1.0 + x * x); }
__attribute__((noinline)) double scale_n(double x, int n) { return n * x * x; }

static double twice(double x) { return helper(x) * helper(2.0 * x); }
static double with_int(double x) { return scale_n(x, 3) + scale_n(sq(x), -2); }
/* variadic: never inlined (its va_list reads the caller's frame); only integers pass through
   the `...`, so the call is constant and the derivative calls it as it is */
__attribute__((noinline)) int count_up(int n, ...) {
    va_list ap;
    va_start(ap, n);
    int s = 0;
    for (int i = 0; i < n; i++) s += va_arg(ap, int);
    va_end(ap);
    return s;
}
static double variadic_scale(double x) { return count_up(3, 1, 2, 4) * sq(x); }
static double two_args(double x, double y) { return helper(x * y) + cube(y) * level3(x); }

static double d_helper(double x) {
    double q = 1.0 + x * x;
    return exp(x) / q - exp(x) * 2.0 * x / (q * q);
}
static double d_level3(double x) { return cos(x * x * x) * 3.0 * x * x + 2.0 * x; }
static double d_level4(double x) {
    return d_level3(x) * exp(-x * x) + level3(x) * exp(-x * x) * (-2.0 * x);
}
static double d_twice(double x) {
    return d_helper(x) * helper(2.0 * x) + helper(x) * d_helper(2.0 * x) * 2.0;
}
static double d_with_int(double x) { return 6.0 * x - 8.0 * x * x * x; }

int main(void) {
    static const double xs[] = {-1.1, -0.4, 0.3, 0.8, 1.6};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("cube reverse", x, __enzyme_autodiff((void *)cube, x), 3.0 * x * x, TOL);
        check("cube forward", x, __enzyme_fwddiff((void *)cube, x, 1.0), 3.0 * x * x, TOL);
        check("level3 reverse", x, __enzyme_autodiff((void *)level3, x), d_level3(x), TOL);
        check("level3 forward", x, __enzyme_fwddiff((void *)level3, x, 1.0), d_level3(x), TOL);
        check("level4 reverse", x, __enzyme_autodiff((void *)level4, x), d_level4(x), TOL);
        check("level4 forward", x, __enzyme_fwddiff((void *)level4, x, 1.0), d_level4(x), TOL);
        check("helper reverse", x, __enzyme_autodiff((void *)helper, x), d_helper(x), TOL);
        check("twice reverse", x, __enzyme_autodiff((void *)twice, x), d_twice(x), TOL);
        check("twice forward", x, __enzyme_fwddiff((void *)twice, x, 1.0), d_twice(x), TOL);
        check("with_int reverse", x, __enzyme_autodiff((void *)with_int, x), d_with_int(x), TOL);
        check("with_int forward", x, __enzyme_fwddiff((void *)with_int, x, 1.0), d_with_int(x), TOL);
        check("variadic reverse", x, __enzyme_autodiff((void *)variadic_scale, x), 14.0 * x, TOL);
        check("variadic forward", x, __enzyme_fwddiff((void *)variadic_scale, x, 1.0), 14.0 * x, TOL);

        double y = 0.5 - x;
        grad2 g = __enzyme_autodiff2((void *)two_args, x, y);
        double dx = d_helper(x * y) * y + y * y * y * d_level3(x);
        double dy = d_helper(x * y) * x + 3.0 * y * y * level3(x);
        check("two_args d/dx", x, g.dx, dx, TOL);
        check("two_args d/dy", x, g.dy, dy, TOL);
        check("two_args forward", x, __enzyme_fwddiff((void *)two_args, x, 1.0, y, -1.0), dx - dy, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
