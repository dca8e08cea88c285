/* Polynomials: reverse and forward mode against the differentiated polynomial. */
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

static double quartic(double x) { return 3.0 * x * x * x * x - 2.0 * x * x * x + x - 7.0; }
static double d_quartic(double x) { return 12.0 * x * x * x - 6.0 * x * x + 1.0; }

/* product form: (x - 1)(x + 2)(x - 1/2) / 4 */
double product_form(double x) { return (x - 1.0) * (x + 2.0) * (x - 0.5) / 4.0; }
static double d_product_form(double x) {
    return ((x + 2.0) * (x - 0.5) + (x - 1.0) * (x - 0.5) + (x - 1.0) * (x + 2.0)) / 4.0;
}

/* x^7 by repeated squaring, written out */
static double seventh(double x) {
    double x2 = x * x;
    double x4 = x2 * x2;
    return x4 * x2 * x;
}
static double d_seventh(double x) { return 7.0 * pow(x, 6.0); }

static double constant(double x) { (void)x; return 42.0; }

int main(void) {
    static const double xs[] = {-2.0, -0.5, 0.0, 0.75, 1.5, 3.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("quartic reverse", x, __enzyme_autodiff((void *)quartic, x), d_quartic(x), TOL);
        check("quartic forward", x, __enzyme_fwddiff((void *)quartic, x, 1.0), d_quartic(x), TOL);
        check("quartic forward dx=2.5", x, __enzyme_fwddiff((void *)quartic, x, 2.5),
              2.5 * d_quartic(x), TOL);
        check("product_form reverse", x, __enzyme_autodiff((void *)product_form, x),
              d_product_form(x), TOL);
        check("product_form forward", x, __enzyme_fwddiff((void *)product_form, x, 1.0),
              d_product_form(x), TOL);
        check("seventh reverse", x, __enzyme_autodiff((void *)seventh, x), d_seventh(x), TOL);
        check("seventh forward", x, __enzyme_fwddiff((void *)seventh, x, 1.0), d_seventh(x), TOL);
        check("constant reverse", x, __enzyme_autodiff((void *)constant, x), 0.0, TOL);
        check("constant forward", x, __enzyme_fwddiff((void *)constant, x, 1.0), 0.0, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
