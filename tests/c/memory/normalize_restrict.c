/* Norm and normalization out[i] = in[i] / norm(in) with restrict pointers (the norm call is loop-invariant): reverse with a seeded output, enzyme_dupnoneed on the output, forward. */
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

static double norm(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

static void normalize(const double *restrict in, double *restrict out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = in[i] / norm(in, n);
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 7; /* 8 */
    double in[NMAX], din[NMAX], out[NMAX], dout[NMAX], w[NMAX], t[NMAX], u[NMAX];
    for (int i = 0; i < n; i++) {
        in[i] = 1.0 + sin(1.2 * i) - 0.1 * i;
        w[i] = 0.5 + 0.3 * (i % 3);
        t[i] = cos(0.9 * i);
    }
    double N = 0.0;
    for (int i = 0; i < n; i++) N += in[i] * in[i];
    N = sqrt(N);
    double uw = 0.0, ut = 0.0;
    for (int i = 0; i < n; i++) { u[i] = in[i] / N; uw += u[i] * w[i]; ut += u[i] * t[i]; }

    for (int i = 0; i < n; i++) din[i] = 0.0;
    __enzyme_autodiff((void *)norm, enzyme_dup, in, din, n);
    for (int i = 0; i < n; i++)
        check("norm dx = x / |x|", i, din[i], u[i], TOL);
    check("norm forward", n, __enzyme_fwddiff((void *)norm, enzyme_dup, in, t, n), ut, TOL);

    /* d in = (w - u (u . w)) / |in| */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) { din[i] = 0.0; dout[i] = w[i]; out[i] = 0.0; }
        if (pass == 0)
            __enzyme_autodiff((void *)normalize, enzyme_dup, in, din, enzyme_dup, out, dout, n);
        else
            __enzyme_autodiff((void *)normalize, enzyme_dup, in, din, enzyme_dupnoneed, out, dout, n);
        for (int i = 0; i < n; i++) {
            check(pass ? "normalize din (out dupnoneed)" : "normalize din", i, din[i], (w[i] - u[i] * uw) / N, TOL);
            check(pass ? "normalize dout zeroed (dupnoneed)" : "normalize dout zeroed", i, dout[i], 0.0, TOL);
            if (pass == 0)
                check("normalize primal", i, out[i], u[i], TOL);
        }
    }
    for (int i = 0; i < n; i++) dout[i] = 0.0;
    __enzyme_fwddiff((void *)normalize, enzyme_dup, in, t, enzyme_dupnoneed, out, dout, n);
    for (int i = 0; i < n; i++)
        check("normalize forward (out dupnoneed)", i, dout[i], (t[i] - u[i] * ut) / N, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
