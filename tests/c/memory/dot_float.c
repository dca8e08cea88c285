/* Float dot product and sum of squares: reverse mode into float shadows, forward mode with a float result. */
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

#define FTOL 1e-4

/* a float result needs a prototype returning float (any name containing __enzyme_fwddiff) */
extern float __enzyme_fwddiff_f(void *, ...);

static float fdot(const float *x, const float *y, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* sum of squares scaled by the index */
static float fsumsq(const float *x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += (float)(i + 1) * x[i] * x[i];
    return s;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10; /* 11 */
    float x[NMAX], y[NMAX], dx[NMAX], dy[NMAX], tx[NMAX], ty[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.25f * (float)i - 1.0f;
        y[i] = (float)sin(0.7 * i) + 0.5f;
        tx[i] = (i % 2) ? 0.5f : -0.25f;
        ty[i] = 0.125f * (float)(i % 4);
        dx[i] = dy[i] = 0.0f;
    }

    __enzyme_autodiff((void *)fdot, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("fdot dx", i, dx[i], y[i], FTOL);
        check("fdot dy", i, dy[i], x[i], FTOL);
    }
    for (int i = 0; i < n; i++) dy[i] = 0.0f;
    __enzyme_autodiff((void *)fdot, enzyme_const, x, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++)
        check("fdot dy (x const)", i, dy[i], x[i], FTOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0f;
    __enzyme_autodiff((void *)fsumsq, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("fsumsq dx", i, dx[i], 2.0 * (i + 1) * x[i], FTOL);

    double want = 0.0, want_sq = 0.0;
    for (int i = 0; i < n; i++) {
        want += (double)tx[i] * y[i] + (double)x[i] * ty[i];
        want_sq += 2.0 * (i + 1) * x[i] * tx[i];
    }
    check("fdot forward", n, __enzyme_fwddiff_f((void *)fdot, enzyme_dup, x, tx, enzyme_dup, y, ty, n), want, FTOL);
    check("fsumsq forward", n, __enzyme_fwddiff_f((void *)fsumsq, enzyme_dup, x, tx, n), want_sq, FTOL);

    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
