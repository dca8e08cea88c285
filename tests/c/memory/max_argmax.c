/* Max, argmax, range and fmax reductions over an array: the derivative flows only to the selected elements; reverse and forward. */
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

static double vmax(const double *x, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > m)
            m = x[i];
    return m;
}

/* x[k] * y[k] at k = argmax x (the index is an int carried through the loop) */
static double at_argmax(const double *x, const double *y, int n) {
    int k = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[k])
            k = i;
    return x[k] * y[k];
}

/* max - min, both selected with fmax / fmin */
static double range(const double *x, int n) {
    double hi = x[0], lo = x[0];
    for (int i = 1; i < n; i++) {
        hi = fmax(hi, x[i]);
        lo = fmin(lo, x[i]);
    }
    return hi - lo;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 11; /* 12 */
    double x[NMAX], y[NMAX], dx[NMAX], dy[NMAX], t[NMAX], ty[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = sin(2.3 * i + 0.4) * (1.0 + 0.05 * i);
        y[i] = 1.0 + 0.5 * i;
        t[i] = 0.3 * i - 1.0;
        ty[i] = 0.25;
    }
    int kmax = 0, kmin = 0;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[kmax]) kmax = i;
        if (x[i] < x[kmin]) kmin = i;
    }

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)vmax, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("vmax dx (1 at the argmax)", i, dx[i], i == kmax ? 1.0 : 0.0, TOL);
    check("vmax forward", n, __enzyme_fwddiff((void *)vmax, enzyme_dup, x, t, n), t[kmax], TOL);

    for (int i = 0; i < n; i++) dx[i] = dy[i] = 0.0;
    __enzyme_autodiff((void *)at_argmax, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("at_argmax dx", i, dx[i], i == kmax ? y[i] : 0.0, TOL);
        check("at_argmax dy", i, dy[i], i == kmax ? x[i] : 0.0, TOL);
    }
    for (int i = 0; i < n; i++) dy[i] = 0.0;
    __enzyme_autodiff((void *)at_argmax, enzyme_const, x, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++)
        check("at_argmax dy (x const)", i, dy[i], i == kmax ? x[i] : 0.0, TOL);
    check("at_argmax forward", n, __enzyme_fwddiff((void *)at_argmax, enzyme_dup, x, t, enzyme_dup, y, ty, n),
          t[kmax] * y[kmax] + x[kmax] * ty[kmax], TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)range, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("range dx", i, dx[i], i == kmax ? 1.0 : i == kmin ? -1.0 : 0.0, TOL);
    check("range forward", n, __enzyme_fwddiff((void *)range, enzyme_dup, x, t, n), t[kmax] - t[kmin], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
