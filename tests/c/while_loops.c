/* while and do-while loops whose exit depends on the data: halving, powers up to a bound, a bisection. */
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

/* halve x until it is at most 1, tripling s each time: 3^k (x / 2^k)^2 */
static double halve(double x) {
    double s = 1.0;
    while (x > 1.0) {
        x *= 0.5;
        s *= 3.0;
    }
    return s * x * x;
}
static double d_halve(double x) {
    int k = 0;
    for (double t = x; t > 1.0; t *= 0.5)
        k++;
    return pow(3.0, k) * 2.0 * x / pow(4.0, k);
}

/* multiply by x until the product reaches 100: x^k, k depends on x */
static double power_until(double x) {
    double y = 1.0;
    do {
        y *= x;
    } while (y < 100.0);
    return y;
}
static double d_power_until(double x) {
    int k = 0;
    double y = 1.0;
    do {
        y *= x;
        k++;
    } while (y < 100.0);
    return k * pow(x, k - 1);
}

/* bisection for the root of t^3 - x on [0, x + 1]. Every midpoint is a dyadic fraction of
   hi = x + 1, so the result is lo = c (x + 1) with c fixed near x: d lo / dx = lo / (x + 1) */
static double bisect(double x) {
    double lo = 0.0, hi = x + 1.0;
    while (hi - lo > 1e-3) {
        double mid = 0.5 * (lo + hi);
        if (mid * mid * mid > x)
            hi = mid;
        else
            lo = mid;
    }
    return lo + x * x;
}
static double d_bisect(double x) {
    return (bisect(x) - x * x) / (x + 1.0) + 2.0 * x;
}

/* a loop whose exit test reads a value computed from x in the body */
static double grow(double x) {
    double acc = x;
    int steps = 0;
    while (acc < 50.0 && steps < 100) {
        acc = acc * 1.5 + x;
        steps++;
    }
    return acc;
}
/* by hand: acc_{k+1} = 1.5 acc_k + x, d acc_{k+1} = 1.5 d acc_k + 1 */
static double d_grow(double x) {
    double acc = x, d = 1.0;
    int steps = 0;
    while (acc < 50.0 && steps < 100) {
        acc = acc * 1.5 + x;
        d = d * 1.5 + 1.0;
        steps++;
    }
    return d;
}

int main(void) {
    static const double xs[] = {0.3, 1.7, 3.1, 7.9, 40.3, 1000.9};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("halve reverse", x, __enzyme_autodiff((void *)halve, x), d_halve(x), TOL);
        check("halve forward", x, __enzyme_fwddiff((void *)halve, x, 1.0), d_halve(x), TOL);
        if (x > 1.0) {
            check("power_until reverse", x, __enzyme_autodiff((void *)power_until, x), d_power_until(x), TOL);
            check("power_until forward", x, __enzyme_fwddiff((void *)power_until, x, 1.0), d_power_until(x), TOL);
        }
        check("bisect reverse", x, __enzyme_autodiff((void *)bisect, x), d_bisect(x), TOL);
        check("bisect forward", x, __enzyme_fwddiff((void *)bisect, x, 1.0), d_bisect(x), TOL);
        check("grow reverse", x, __enzyme_autodiff((void *)grow, x), d_grow(x), TOL);
        check("grow forward", x, __enzyme_fwddiff((void *)grow, x, 1.0), d_grow(x), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
