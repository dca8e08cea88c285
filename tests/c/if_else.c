/* if/else chains: a four-piece function, nested ifs, and a branch that assigns through a local. */
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

static double piecewise(double x) {
    if (x < -1.0)
        return -x * x;
    else if (x < 0.0)
        return sin(x);
    else if (x < 2.0)
        return exp(x);
    else
        return x * x * x / 3.0;
}
static double d_piecewise(double x) {
    if (x < -1.0) return -2.0 * x;
    if (x < 0.0) return cos(x);
    if (x < 2.0) return exp(x);
    return x * x;
}

static double nested(double x, double y) {
    double r = 0.0;
    if (x > 0) {
        if (y > x)
            r = x * y;
        else
            r = x + y * y;
    } else {
        r = y - x * x;
        if (y < 0)
            r *= y;
    }
    return r + x;
}

typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);

static void d_nested(double x, double y, double *dx, double *dy) {
    if (x > 0) {
        if (y > x) { *dx = y; *dy = x; }
        else { *dx = 1.0; *dy = 2.0 * y; }
    } else if (y < 0) {
        /* r = (y - x^2) y */
        *dx = -2.0 * x * y;
        *dy = 2.0 * y - x * x;
    } else {
        *dx = -2.0 * x;
        *dy = 1.0;
    }
    *dx += 1.0;
}

int main(void) {
    static const double xs[] = {-2.5, -1.5, -0.5, 0.25, 1.0, 1.9, 2.5, 4.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("piecewise reverse", x, __enzyme_autodiff((void *)piecewise, x), d_piecewise(x), TOL);
        check("piecewise forward", x, __enzyme_fwddiff((void *)piecewise, x, 1.0), d_piecewise(x), TOL);
    }
    static const double pts[][2] = {{1.0, 2.0}, {2.0, 1.0}, {-1.0, 0.5}, {-1.5, -2.0}, {0.5, -0.25}};
    for (unsigned i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        double x = pts[i][0], y = pts[i][1], dx, dy;
        d_nested(x, y, &dx, &dy);
        grad2 g = __enzyme_autodiff2((void *)nested, x, y);
        check("nested d/dx", x, g.dx, dx, TOL);
        check("nested d/dy", x, g.dy, dy, TOL);
        check("nested forward", x, __enzyme_fwddiff((void *)nested, x, 1.0, y, 2.0), dx + 2.0 * dy, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
