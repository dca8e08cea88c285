/* Polynomials with coefficients in an enzyme_const array and x active (scalar result), coefficients duplicated, and a batch evaluation into an *out array with x dup; reverse and forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#define TOL 1e-8

static double poly(const double *c, int n, double x) {
    double s = 0.0;
    for (int i = n - 1; i >= 0; i--)
        s = s * x + c[i];
    return s;
}

/* y_i = p(x_i) for a batch of points */
static void polyval(const double *c, int nc, const double *x, double *y, int n) {
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int k = nc - 1; k >= 0; k--)
            s = s * x[i] + c[k];
        y[i] = s;
    }
}

static const double coef[] = {0.5, -1.25, 2.0, 0.75, -3.0, 1.0, 0.125, -0.5, 4.0, 1.5};

static double dpoly(const double *c, int n, double x) {
    double d = 0.0;
    for (int i = 1; i < n; i++)
        d += i * c[i] * pow(x, i - 1);
    return d;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int nc = argc + 8; /* 9 coefficients */
    double c[NMAX], dc[NMAX];
    for (int i = 0; i < nc; i++) c[i] = coef[i];
    static const double xs[] = {-1.5, -0.3, 0.0, 0.7, 1.2};
    for (int k = 0; k < 5; k++) {
        double x = xs[k];
        check("poly d/dx (c const)", x, __enzyme_autodiff((void *)poly, enzyme_const, c, nc, x), dpoly(c, nc, x), TOL);
        check("poly d/dx (c const, x out)", x, __enzyme_autodiff((void *)poly, enzyme_const, c, nc, enzyme_out, x), dpoly(c, nc, x), TOL);
        check("poly forward (c const)", x, __enzyme_fwddiff((void *)poly, enzyme_const, c, nc, x, 1.0), dpoly(c, nc, x), TOL);
        for (int i = 0; i < nc; i++) dc[i] = 0.0;
        __enzyme_autodiff((void *)poly, enzyme_dup, c, dc, nc, enzyme_const, x);
        double fwd = 0.0;
        for (int i = 0; i < nc; i++) {
            check("poly dc_i = x^i", i, dc[i], pow(x, i), TOL);
            fwd += pow(x, i) * 0.1 * i;
            dc[i] = 0.1 * i;
        }
        check("poly forward (dc, x)", x, __enzyme_fwddiff((void *)poly, enzyme_dup, c, dc, nc, x, 2.0), fwd + 2.0 * dpoly(c, nc, x), TOL);
    }

    int n = argc + 5; /* 6 points */
    double x[NMAX], dx[NMAX], y[NMAX], dy[NMAX], tx[NMAX];
    for (int i = 0; i < n; i++) { x[i] = -1.2 + 0.45 * i; dx[i] = 0.0; dy[i] = 1.0 + i; tx[i] = 0.5 - 0.2 * i; }
    __enzyme_autodiff((void *)polyval, enzyme_const, c, nc, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("polyval dx", i, dx[i], (1.0 + i) * dpoly(c, nc, x[i]), TOL);
        check("polyval dy zeroed", i, dy[i], 0.0, TOL);
        check("polyval primal", i, y[i], poly(c, nc, x[i]), TOL);
    }
    for (int i = 0; i < n; i++) dy[i] = 0.0;
    __enzyme_fwddiff((void *)polyval, enzyme_const, c, nc, enzyme_dup, x, tx, enzyme_dupnoneed, y, dy, n);
    for (int i = 0; i < n; i++)
        check("polyval forward (y dupnoneed)", i, dy[i], dpoly(c, nc, x[i]) * tx[i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
