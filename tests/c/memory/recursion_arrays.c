/* Recursion over arrays: a recursive sum of squares by halves, a divide-and-conquer product, recursive Horner with constant coefficients (enzyme_const) and an active x. */
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

static double rsumsq(const double *x, int n) {
    if (n == 1)
        return x[0] * x[0];
    int h = n / 2;
    return rsumsq(x, h) + rsumsq(x + h, n - h);
}

static double rprod(const double *x, int n) {
    if (n == 1)
        return x[0];
    int h = n / 2;
    return rprod(x, h) * rprod(x + h, n - h);
}

/* c_0 + x (c_1 + x (c_2 + ...)) */
static double rhorner(const double *c, int n, double x) {
    if (n == 0)
        return 0.0;
    return c[0] + x * rhorner(c + 1, n - 1, x);
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10; /* 11: uneven halves */
    double x[NMAX], dx[NMAX], t[NMAX], c[NMAX], dc[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.9 + 0.25 * sin(1.7 * i);
        t[i] = 0.3 - 0.05 * i;
        c[i] = 1.0 / (i + 1.0) - 0.2;
    }
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)rsumsq, enzyme_dup, x, dx, n);
    double fwd = 0.0, P = 1.0;
    for (int i = 0; i < n; i++) {
        check("rsumsq dx", i, dx[i], 2.0 * x[i], TOL);
        fwd += 2.0 * x[i] * t[i];
        P *= x[i];
    }
    check("rsumsq forward", n, __enzyme_fwddiff((void *)rsumsq, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)rprod, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("rprod dx = P / x_i", i, dx[i], P / x[i], TOL);
        fwd += P / x[i] * t[i];
    }
    check("rprod forward", n, __enzyme_fwddiff((void *)rprod, enzyme_dup, x, t, n), fwd, TOL);

    static const double xs[] = {-1.25, 0.5, 1.5};
    for (int k = 0; k < 3; k++) {
        double z = xs[k], d = 0.0;
        for (int i = 1; i < n; i++) d += i * c[i] * pow(z, i - 1);
        check("rhorner d/dx (c const)", z, __enzyme_autodiff((void *)rhorner, enzyme_const, c, n, z), d, TOL);
        check("rhorner forward (c const)", z, __enzyme_fwddiff((void *)rhorner, enzyme_const, c, n, z, 1.0), d, TOL);
        for (int i = 0; i < n; i++) dc[i] = 0.0;
        __enzyme_autodiff((void *)rhorner, enzyme_dup, c, dc, n, enzyme_const, z);
        for (int i = 0; i < n; i++)
            check("rhorner dc_i = x^i", i, dc[i], pow(z, i), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
