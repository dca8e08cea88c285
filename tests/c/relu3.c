/* relu3(x) = x > 0 ? x^3 : 0, a branch-free select and an if/else version. */
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

static double relu3(double x) { return x > 0 ? x * x * x : 0; }
static double d_relu3(double x) { return x > 0 ? 3.0 * x * x : 0.0; }

static double relu3_if(double x) {
    double y;
    if (x > 0)
        y = x * x * x;
    else
        y = 0.0;
    return y;
}

/* leaky variant: slope 0.1 on the negative side */
static double leaky(double x) { return x > 0 ? x * x * x : 0.1 * x; }
static double d_leaky(double x) { return x > 0 ? 3.0 * x * x : 0.1; }

int main(void) {
    static const double xs[] = {-1.5, -0.25, 0.25, 1.0, 2.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("relu3 reverse", x, __enzyme_autodiff((void *)relu3, x), d_relu3(x), TOL);
        check("relu3 forward", x, __enzyme_fwddiff((void *)relu3, x, 1.0), d_relu3(x), TOL);
        check("relu3_if reverse", x, __enzyme_autodiff((void *)relu3_if, x), d_relu3(x), TOL);
        check("relu3_if forward", x, __enzyme_fwddiff((void *)relu3_if, x, 1.0), d_relu3(x), TOL);
        check("leaky reverse", x, __enzyme_autodiff((void *)leaky, x), d_leaky(x), TOL);
        check("leaky forward dx=-2", x, __enzyme_fwddiff((void *)leaky, x, -2.0),
              -2.0 * d_leaky(x), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
