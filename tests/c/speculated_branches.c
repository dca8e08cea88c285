/* Branches whose untaken side is NaN or infinite at the point: the optimizer computes both
   sides and selects (speculation), so the reverse sweep meets partials like 1/0 or
   pow(-x, -2/3) multiplied by the exactly-zero adjoint of the side not chosen. That must
   contribute zero, not NaN. Checked against closed forms, forward and reverse. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-28s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-12

double safe_log(double x) { return x > 0 ? log(x) * x : 0.5 * x; }
double safe_sqrt(double x) { return x > 0 ? sqrt(x) : -x; }
double signed_cbrt(double x) { return x < 0 ? -pow(-x, 1.0 / 3.0) : pow(x, 1.0 / 3.0); }
double safe_div(double x, double y) { return y != 0 ? x / y : x; }
double guarded_product(double x) { double t = log(x); return x > 0 ? t * x * x : 3 * x; }

int main(void) {
    static const double xs[] = {-2.0, -0.7, 0.7, 2.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        double d_log = x > 0 ? log(x) + 1 : 0.5;
        check("safe_log reverse", x, __enzyme_autodiff((void *)safe_log, x), d_log, TOL);
        check("safe_log forward", x, __enzyme_fwddiff((void *)safe_log, x, 1.0), d_log, TOL);
        double d_sqrt = x > 0 ? 0.5 / sqrt(x) : -1.0;
        check("safe_sqrt reverse", x, __enzyme_autodiff((void *)safe_sqrt, x), d_sqrt, TOL);
        double d_cbrt = pow(fabs(x), -2.0 / 3.0) / 3.0;
        check("signed_cbrt reverse", x, __enzyme_autodiff((void *)signed_cbrt, x), d_cbrt, TOL);
        check("signed_cbrt forward", x, __enzyme_fwddiff((void *)signed_cbrt, x, 1.0), d_cbrt, TOL);
        double d_prod = x > 0 ? 2 * x * log(x) + x : 3.0;
        check("guarded_product reverse", x, __enzyme_autodiff((void *)guarded_product, x), d_prod, TOL);
    }
    grad2 g = __enzyme_autodiff2((void *)safe_div, 1.5, 0.0);
    check("safe_div d/dx at y = 0", 0, g.dx, 1.0, TOL);
    check("safe_div d/dy at y = 0", 0, g.dy, 0.0, TOL);
    g = __enzyme_autodiff2((void *)safe_div, 1.5, 2.0);
    check("safe_div d/dx at y = 2", 2, g.dx, 0.5, TOL);
    check("safe_div d/dy at y = 2", 2, g.dy, -1.5 / 4, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
