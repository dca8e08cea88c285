/* Float arrays converted to double and back: double accumulation of float products, a double computation stored into a float *out array, log-sum-exp in double returned as float; reverse into float shadows and forward. */
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

extern float __enzyme_fwddiff_f(void *, ...);

static double dsdot(const float *x, const float *y, int n) {
    double acc = 0.0;
    for (int i = 0; i < n; i++)
        acc += (double)x[i] * (double)y[i];
    return acc;
}

/* y_i = (float)(x_i^2 + sin x_i) computed in double from double input */
static void to_float(const double *x, float *y, int n) {
    for (int i = 0; i < n; i++)
        y[i] = (float)(x[i] * x[i] + sin(x[i]));
}

static float flse(const float *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += exp((double)x[i]);
    return (float)log(s);
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 7; /* 8 */
    float xf[NMAX], yf[NMAX], dxf[NMAX], dyf[NMAX], txf[NMAX], fout[NMAX], dfout[NMAX];
    double xd[NMAX], dxd[NMAX], txd[NMAX];
    for (int i = 0; i < n; i++) {
        xf[i] = 0.25f * (float)i - 0.75f;
        yf[i] = 1.0f - 0.125f * (float)i;
        txf[i] = (i % 2) ? 0.5f : -1.0f;
        xd[i] = 0.3 * i - 1.1;
        txd[i] = 0.25;
    }
    for (int i = 0; i < n; i++) dxf[i] = dyf[i] = 0.0f;
    __enzyme_autodiff((void *)dsdot, enzyme_dup, xf, dxf, enzyme_dup, yf, dyf, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("dsdot dx (float shadow)", i, dxf[i], yf[i], FTOL);
        check("dsdot dy (float shadow)", i, dyf[i], xf[i], FTOL);
        fwd += (double)txf[i] * yf[i];
    }
    check("dsdot forward", n, __enzyme_fwddiff((void *)dsdot, enzyme_dup, xf, txf, enzyme_const, yf, n), fwd, FTOL);

    for (int i = 0; i < n; i++) { dxd[i] = 0.0; dfout[i] = 1.0f + 0.5f * (float)i; }
    __enzyme_autodiff((void *)to_float, enzyme_dup, xd, dxd, enzyme_dup, fout, dfout, n);
    for (int i = 0; i < n; i++) {
        check("to_float dx (double)", i, dxd[i], (1.0 + 0.5 * i) * (2.0 * xd[i] + cos(xd[i])), FTOL);
        check("to_float dy zeroed", i, dfout[i], 0.0, FTOL);
        check("to_float primal", i, fout[i], xd[i] * xd[i] + sin(xd[i]), FTOL);
    }
    for (int i = 0; i < n; i++) dfout[i] = 0.0f;
    __enzyme_fwddiff((void *)to_float, enzyme_dup, xd, txd, enzyme_dup, fout, dfout, n);
    for (int i = 0; i < n; i++)
        check("to_float forward", i, dfout[i], 0.25 * (2.0 * xd[i] + cos(xd[i])), FTOL);

    double s = 0.0;
    for (int i = 0; i < n; i++) s += exp((double)xf[i]);
    for (int i = 0; i < n; i++) dxf[i] = 0.0f;
    __enzyme_autodiff((void *)flse, enzyme_dup, xf, dxf, n);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("flse dx = softmax", i, dxf[i], exp((double)xf[i]) / s, FTOL);
        fwd += exp((double)xf[i]) / s * txf[i];
    }
    check("flse forward (float result)", n, __enzyme_fwddiff_f((void *)flse, enzyme_dup, xf, txf, n), fwd, FTOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
