/* Early returns: from an if before a loop, from inside a loop, and in a helper with a guard. */
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

static double early(double x) {
    if (x < 0)
        return x * x;
    double y = exp(x);
    for (int i = 0; i < 10; i++) {
        if (y > 100.0)
            return 2.0 * y;
        y *= 1.0 + x;
    }
    return y;
}
static double d_early(double x) {
    if (x < 0)
        return 2.0 * x;
    double y = exp(x);
    int k = 0, left_early = 0;
    for (; k < 10; k++) {
        if (y > 100.0) {
            left_early = 1;
            break;
        }
        y *= 1.0 + x;
    }
    /* y = e^x (1 + x)^k */
    double dy = exp(x) * pow(1.0 + x, k) + (k > 0 ? exp(x) * k * pow(1.0 + x, k - 1) : 0.0);
    return left_early ? 2.0 * dy : dy;
}

static double safe_log(double x) {
    if (x <= 0.0)
        return 0.0;
    return log(x);
}
/* the guard is taken for some x and not for others */
static double use_safe_log(double x) { return safe_log(x - 1.0) + safe_log(2.0 - x) * x; }
static double d_use_safe_log(double x) {
    double d = 0.0;
    if (x - 1.0 > 0.0)
        d += 1.0 / (x - 1.0);
    if (2.0 - x > 0.0)
        d += -x / (2.0 - x) + log(2.0 - x);
    return d;
}

/* returns from three places, each with a different formula */
static double three_exits(double x, int mode) {
    double y = x * x;
    if (mode == 0)
        return y;
    y = sin(y);
    if (mode == 1)
        return y * x;
    return y + x;
}

int main(void) {
    static const double xs[] = {-1.2, 0.1, 0.5, 1.25, 1.5, 2.5, 5.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("early reverse", x, __enzyme_autodiff((void *)early, x), d_early(x), TOL);
        check("early forward", x, __enzyme_fwddiff((void *)early, x, 1.0), d_early(x), TOL);
        check("use_safe_log reverse", x, __enzyme_autodiff((void *)use_safe_log, x), d_use_safe_log(x), TOL);
        check("use_safe_log forward", x, __enzyme_fwddiff((void *)use_safe_log, x, 1.0), d_use_safe_log(x), TOL);
        double want[3] = {2.0 * x, cos(x * x) * 2.0 * x * x + sin(x * x), cos(x * x) * 2.0 * x + 1.0};
        for (int mode = 0; mode < 3; mode++) {
            check("three_exits reverse", x, __enzyme_autodiff((void *)three_exits, x, mode), want[mode], TOL);
            check("three_exits forward", x, __enzyme_fwddiff((void *)three_exits, x, 1.0, mode), want[mode], TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
