/* Mixed int, long and double arguments: integers are constant without any marker, in both modes. */
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

static double f(double x, int n, double y, long m) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x * y / (i + 1);
    return s + m * y * y + (double)n * x;
}
static double g(int n, double x) { return n > 2 ? sin(n * x) : cos(n * x); }

int main(int argc, char **argv) {
    (void)argv;
    static const double pts[][2] = {{0.5, 1.5}, {-1.25, 0.75}, {2.0, -0.5}};
    for (unsigned i = 0; i < 3; i++) {
        double x = pts[i][0], y = pts[i][1];
        for (int n = 0; n < 5; n++) {
            long m = (long)n * 1000000000L + argc; /* does not fit in an int */
            double h = 0.0;
            for (int k = 1; k <= n; k++)
                h += 1.0 / k;
            double dx = y * h + n, dy = x * h + 2.0 * (double)m * y;
            grad2 r = __enzyme_autodiff2((void *)f, x, n, y, m);
            check("f d/dx", x, r.dx, dx, TOL);
            check("f d/dy", x, r.dy, dy, TOL);
            check("f forward", x, __enzyme_fwddiff((void *)f, x, 1.0, n, y, 0.5, m), dx + 0.5 * dy, TOL);
            double want = n > 2 ? n * cos(n * x) : -n * sin(n * x);
            check("g reverse", x, __enzyme_autodiff((void *)g, n, x), want, TOL);
            check("g forward", x, __enzyme_fwddiff((void *)g, n, x, 1.0), want, TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
