/* Reverse mode with enzyme_const and enzyme_out markers, alone and mixed, on double and int arguments. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* Several active doubles: Enzyme returns their derivatives as a struct, in argument order.
   A second prototype needs a second name; any name containing __enzyme_autodiff works. */
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, ...);

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

static double f(double a, double x) { return a * sin(x) + x * x / a; }
static double g(double a, double x, double b) { return exp(a * x) + b * x * a; }
static double h(double x, int k) { return k * x * x; }

int main(void) {
    static const double pts[][2] = {{2.0, 0.5}, {-1.5, 1.25}, {0.75, -2.0}};
    for (unsigned i = 0; i < 3; i++) {
        double a = pts[i][0], x = pts[i][1], b = 3.0 - x;
        double fa = sin(x) - x * x / (a * a), fx = a * cos(x) + 2.0 * x / a;

        check("f, a const", x, __enzyme_autodiff((void *)f, enzyme_const, a, x), fx, TOL);
        check("f, x const", x, __enzyme_autodiff((void *)f, a, enzyme_const, x), fa, TOL);
        check("f, a const, x out", x, __enzyme_autodiff((void *)f, enzyme_const, a, enzyme_out, x), fx, TOL);
        check("f, a out, x const", x, __enzyme_autodiff((void *)f, enzyme_out, a, enzyme_const, x), fa, TOL);

        grad2 r = __enzyme_autodiff2((void *)f, a, x);
        check("f, both active: d/da", x, r.dx, fa, TOL);
        check("f, both active: d/dx", x, r.dy, fx, TOL);
        r = __enzyme_autodiff2((void *)f, enzyme_out, a, enzyme_out, x);
        check("f, both out: d/da", x, r.dx, fa, TOL);
        check("f, both out: d/dx", x, r.dy, fx, TOL);

        double e = exp(a * x);
        double ga = x * e + b * x, gx = a * e + b * a, gb = x * a;
        r = __enzyme_autodiff2((void *)g, a, x, enzyme_const, b);
        check("g, b const: d/da", x, r.dx, ga, TOL);
        check("g, b const: d/dx", x, r.dy, gx, TOL);
        r = __enzyme_autodiff2((void *)g, enzyme_const, a, x, b);
        check("g, a const: d/dx", x, r.dx, gx, TOL);
        check("g, a const: d/db", x, r.dy, gb, TOL);
        r = __enzyme_autodiff2((void *)g, enzyme_out, a, enzyme_const, x, enzyme_out, b);
        check("g, x const: d/da", x, r.dx, ga, TOL);
        check("g, x const: d/db", x, r.dy, gb, TOL);
        check("g, a and b const", x, __enzyme_autodiff((void *)g, enzyme_const, a, x, enzyme_const, b), gx, TOL);

        for (int k = -2; k <= 2; k++) {
            check("h, int implicit", x, __enzyme_autodiff((void *)h, x, k), 2.0 * k * x, TOL);
            check("h, int marked const", x, __enzyme_autodiff((void *)h, x, enzyme_const, k), 2.0 * k * x, TOL);
            check("h, x out, int const", x, __enzyme_autodiff((void *)h, enzyme_out, x, enzyme_const, k),
                  2.0 * k * x, TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
