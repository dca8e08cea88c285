/* Exponent scaling and neighbours (issue 24 item 6): frexp (the mantissa), ldexp, scalbn, scalbln,
   nextafter, nexttoward, exp10 and logb, in double, float and long double, reverse and forward mode.
   frexp(x, &e) = x * 2^-e with e constant between powers of two: d/dx = 2^-e. ldexp(x, n) =
   scalbn(x, n) = scalbln(x, n) = x * 2^n: d/dx = 2^n. nextafter(x, y) is x moved by one ulp
   toward y: d/dx = 1, d/dy = 0. exp10(x) = 10^x: d/dx = ln(10) 10^x. Points avoid powers of two
   (where frexp's exponent jumps). */
#define _GNU_SOURCE
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);
float __enzyme_autodiff_f(float (*)(float), float);
float __enzyme_fwddiff_f(float (*)(float), float, float);

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
#define FTOL 1e-4

/* the mantissa times something smooth, so that the exponent's derivative (none) would show */
static double f_frexp(double x) { int e; double m = frexp(x, &e); return m * m + e; }
static double f_frexpl(double x) { int e; long double m = frexpl((long double)x, &e); return (double)(m * m) + e; }
static float f_frexpf(float x) { int e; float m = frexpf(x, &e); return m * m + (float)e; }
static double f_ldexp(double x, int n) { return ldexp(x * x, n); }
static double f_ldexpl(double x, int n) { return (double)ldexpl((long double)x * x, n); }
static float f_ldexpf(float x) { return ldexpf(x * x, 3); }
static double f_scalbn(double x, int n) { return scalbn(sin(x), n); }
static double f_scalbnl(double x, int n) { return (double)scalbnl(sinl((long double)x), n); }
static float f_scalbnf(float x) { return scalbnf(sinf(x), -2); }
static double f_scalbln(double x, long n) { return scalbln(x * x * x, n); }
static double f_scalblnl(double x, long n) { return (double)scalblnl((long double)x * x * x, n); }
static float f_scalblnf(float x) { return scalblnf(x * x * x, 5L); }
/* d/dx = 1, d/dy = 0: the result is x moved by one ulp toward y */
static double f_nextafter(double x, double y) { return nextafter(x * x, y); }
static double f_nextafterl(double x, double y) { return (double)nextafterl((long double)x * x, (long double)y); }
static float f_nextafterf(float x) { return nextafterf(x * x, 100.0f); }
static double f_nexttoward(double x, double y) { return nexttoward(x * x, (long double)y); }
static double f_nexttowardl(double x, double y) { return (double)nexttowardl((long double)x * x, (long double)y); }
static float f_nexttowardf(float x) { return nexttowardf(x * x, -100.0L); }
static double f_exp10(double x) { return exp10(2.0 * x); }
static double f_exp10l(double x) { return (double)exp10l(2.0L * x); }
static float f_exp10f(float x) { return exp10f(2.0f * x); }

static double fd(double (*f)(double), double x) {
    double h = 1e-6;
    return (f(x + h) - f(x - h)) / (2.0 * h);
}
static double f_exp10_only(double x) { return f_exp10(x); }
/* logb(x) is the exponent of x as a float, piecewise constant: d/dx (x logb x) = logb x (session 34:
   refused, no rule) */
static double f_logb(double x) { return x * logb(x) + sin(x); }
static double f_logbl(double x) { return (double)((long double)x * logbl((long double)x)); }
static float f_logbf(float x) { return x * logbf(x * x); }

static void test(double x) {
    int e;
    double m = frexp(x, &e), pow2e = ldexp(1.0, -e);
    /* d/dx (m^2 + e) = 2 m 2^-e */
    check("frexp reverse", x, __enzyme_autodiff((void *)f_frexp, x), 2.0 * m * pow2e, TOL);
    check("frexp forward", x, __enzyme_fwddiff((void *)f_frexp, x, 1.5), 1.5 * 2.0 * m * pow2e, TOL);
    check("frexpl reverse", x, __enzyme_autodiff((void *)f_frexpl, x), 2.0 * m * pow2e, TOL);
    check("frexpl forward", x, __enzyme_fwddiff((void *)f_frexpl, x, 1.5), 1.5 * 2.0 * m * pow2e, TOL);
    check("frexpf reverse", x, __enzyme_autodiff_f(f_frexpf, (float)x), 2.0 * m * pow2e, FTOL);
    check("frexpf forward", x, __enzyme_fwddiff_f(f_frexpf, (float)x, 1.5f), 1.5 * 2.0 * m * pow2e, FTOL);

    check("ldexp reverse", x, __enzyme_autodiff((void *)f_ldexp, x, 5), 2.0 * x * 32.0, TOL);
    check("ldexp forward", x, __enzyme_fwddiff((void *)f_ldexp, x, 2.0, -3), 2.0 * 2.0 * x / 8.0, TOL);
    check("ldexpl reverse", x, __enzyme_autodiff((void *)f_ldexpl, x, 5), 2.0 * x * 32.0, TOL);
    check("ldexpl forward", x, __enzyme_fwddiff((void *)f_ldexpl, x, 2.0, -3), 2.0 * 2.0 * x / 8.0, TOL);
    check("ldexpf reverse", x, __enzyme_autodiff_f(f_ldexpf, (float)x), 2.0 * x * 8.0, FTOL);
    check("ldexpf forward", x, __enzyme_fwddiff_f(f_ldexpf, (float)x, 0.5f), 0.5 * 2.0 * x * 8.0, FTOL);

    check("scalbn reverse", x, __enzyme_autodiff((void *)f_scalbn, x, 4), 16.0 * cos(x), TOL);
    check("scalbn forward", x, __enzyme_fwddiff((void *)f_scalbn, x, 3.0, -1), 3.0 * 0.5 * cos(x), TOL);
    check("scalbnl reverse", x, __enzyme_autodiff((void *)f_scalbnl, x, 4), 16.0 * cos(x), TOL);
    check("scalbnl forward", x, __enzyme_fwddiff((void *)f_scalbnl, x, 3.0, -1), 3.0 * 0.5 * cos(x), TOL);
    check("scalbnf reverse", x, __enzyme_autodiff_f(f_scalbnf, (float)x), 0.25 * cos(x), FTOL);
    check("scalbnf forward", x, __enzyme_fwddiff_f(f_scalbnf, (float)x, 2.0f), 2.0 * 0.25 * cos(x), FTOL);

    check("scalbln reverse", x, __enzyme_autodiff((void *)f_scalbln, x, 3L), 3.0 * x * x * 8.0, TOL);
    check("scalbln forward", x, __enzyme_fwddiff((void *)f_scalbln, x, 1.0, -2L), 3.0 * x * x / 4.0, TOL);
    check("scalblnl reverse", x, __enzyme_autodiff((void *)f_scalblnl, x, 3L), 3.0 * x * x * 8.0, TOL);
    check("scalblnl forward", x, __enzyme_fwddiff((void *)f_scalblnl, x, 1.0, -2L), 3.0 * x * x / 4.0, TOL);
    check("scalblnf reverse", x, __enzyme_autodiff_f(f_scalblnf, (float)x), 3.0 * x * x * 32.0, FTOL);
    check("scalblnf forward", x, __enzyme_fwddiff_f(f_scalblnf, (float)x, -1.0f), -3.0 * x * x * 32.0, FTOL);

    grad2 g = __enzyme_autodiff2((void *)f_nextafter, x, 7.0);
    check("nextafter d/dx", x, g.dx, 2.0 * x, TOL);
    check("nextafter d/dy", x, g.dy, 0.0, TOL);
    check("nextafter forward", x, __enzyme_fwddiff((void *)f_nextafter, x, 1.0, -7.0, 5.0), 2.0 * x, TOL);
    g = __enzyme_autodiff2((void *)f_nextafterl, x, -7.0);
    check("nextafterl d/dx", x, g.dx, 2.0 * x, TOL);
    check("nextafterl d/dy", x, g.dy, 0.0, TOL);
    check("nextafterl forward", x, __enzyme_fwddiff((void *)f_nextafterl, x, 1.0, 7.0, 5.0), 2.0 * x, TOL);
    check("nextafterf reverse", x, __enzyme_autodiff_f(f_nextafterf, (float)x), 2.0 * x, FTOL);
    check("nextafterf forward", x, __enzyme_fwddiff_f(f_nextafterf, (float)x, 1.0f), 2.0 * x, FTOL);
    g = __enzyme_autodiff2((void *)f_nexttoward, x, 7.0);
    check("nexttoward d/dx", x, g.dx, 2.0 * x, TOL);
    check("nexttoward d/dy", x, g.dy, 0.0, TOL);
    check("nexttoward forward", x, __enzyme_fwddiff((void *)f_nexttoward, x, 1.0, -7.0, 5.0), 2.0 * x, TOL);
    g = __enzyme_autodiff2((void *)f_nexttowardl, x, 7.0);
    check("nexttowardl d/dx", x, g.dx, 2.0 * x, TOL);
    check("nexttowardl d/dy", x, g.dy, 0.0, TOL);
    check("nexttowardl forward", x, __enzyme_fwddiff((void *)f_nexttowardl, x, 1.0, -7.0, 5.0), 2.0 * x, TOL);
    check("nexttowardf reverse", x, __enzyme_autodiff_f(f_nexttowardf, (float)x), 2.0 * x, FTOL);
    check("nexttowardf forward", x, __enzyme_fwddiff_f(f_nexttowardf, (float)x, 1.0f), 2.0 * x, FTOL);

    check("logb reverse", x, __enzyme_autodiff((void *)f_logb, x), logb(x) + cos(x), TOL);
    check("logb forward", x, __enzyme_fwddiff((void *)f_logb, x, 2.0), 2.0 * (logb(x) + cos(x)), TOL);
    check("logbl reverse", x, __enzyme_autodiff((void *)f_logbl, x), logb(x), TOL);
    check("logbl forward", x, __enzyme_fwddiff((void *)f_logbl, x, 2.0), 2.0 * logb(x), TOL);
    check("logbf reverse", x, __enzyme_autodiff_f(f_logbf, (float)x), logb(x * x), FTOL);
    check("logbf forward", x, __enzyme_fwddiff_f(f_logbf, (float)x, 2.0f), 2.0 * logb(x * x), FTOL);

    double want = 2.0 * log(10.0) * pow(10.0, 2.0 * x);
    check("exp10 reverse", x, __enzyme_autodiff((void *)f_exp10, x), want, TOL);
    check("exp10 forward", x, __enzyme_fwddiff((void *)f_exp10, x, 1.0), want, TOL);
    check("exp10 central difference", x, __enzyme_autodiff((void *)f_exp10, x), fd(f_exp10_only, x), 1e-6);
    check("exp10l reverse", x, __enzyme_autodiff((void *)f_exp10l, x), want, TOL);
    check("exp10l forward", x, __enzyme_fwddiff((void *)f_exp10l, x, 1.0), want, TOL);
    check("exp10f reverse", x, __enzyme_autodiff_f(f_exp10f, (float)x), want, FTOL);
    check("exp10f forward", x, __enzyme_fwddiff_f(f_exp10f, (float)x, 1.0f), want, FTOL);
}

int main(int argc, char **argv) {
    (void)argv;
    /* float points are exact in float, away from powers of two */
    double points[] = {0.75, -1.375, 3.0, 0.15625 * argc, -6.5};
    for (unsigned i = 0; i < sizeof points / sizeof points[0]; i++)
        test(points[i]);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
