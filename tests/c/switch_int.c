/* switch statements on an int derived from x: cases, fall-through, early return, default. */
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

static double sw(double x) {
    double y = 1.0;
    switch ((int)floor(x)) {
    case 0:
        y = x * x;
        break;
    case 1:
        y = sin(x);
        /* fall through */
    case 2:
        y = y * x;
        break;
    case 3:
        return exp(x);
    default:
        y = 2.0 * x;
    }
    return y + x;
}
static double d_sw(double x) {
    switch ((int)floor(x)) {
    case 0: return 2.0 * x + 1.0;
    case 1: return cos(x) * x + sin(x) + 1.0;
    case 2: return 2.0;
    case 3: return exp(x);
    default: return 3.0;
    }
}

/* a dense switch (a jump table) over the integer part of 4 x */
static double table(double x) {
    double r;
    switch ((int)(4.0 * x)) {
    case 0: r = x; break;
    case 1: r = x * x; break;
    case 2: r = x * x * x; break;
    case 3: r = sqrt(x); break;
    case 4: r = log(x); break;
    case 5: r = 1.0 / x; break;
    case 6: r = exp(-x); break;
    default: r = 0.0;
    }
    return r;
}
static double d_table(double x) {
    switch ((int)(4.0 * x)) {
    case 0: return 1.0;
    case 1: return 2.0 * x;
    case 2: return 3.0 * x * x;
    case 3: return 0.5 / sqrt(x);
    case 4: return 1.0 / x;
    case 5: return -1.0 / (x * x);
    case 6: return -exp(-x);
    default: return 0.0;
    }
}

int main(void) {
    static const double xs[] = {0.1, 0.4, 0.6, 0.9, 1.1, 1.4, 1.6, 2.5, 3.5, -1.5, 7.2};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("sw reverse", x, __enzyme_autodiff((void *)sw, x), d_sw(x), TOL);
        check("sw forward", x, __enzyme_fwddiff((void *)sw, x, 1.0), d_sw(x), TOL);
        if (x > 0) {
            check("table reverse", x, __enzyme_autodiff((void *)table, x), d_table(x), TOL);
            check("table forward", x, __enzyme_fwddiff((void *)table, x, 1.0), d_table(x), TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
