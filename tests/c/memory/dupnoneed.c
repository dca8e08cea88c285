/* enzyme_dupnoneed: outputs whose primal values are not needed (only the shadows are checked), an input overwritten in place and marked dupnoneed, in reverse and forward mode; compared with enzyme_dup. */
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

static void square_into(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] * x[i];
}

/* x_i <- 3 x_i + x_i^2, in place */
static void poly_inplace(double *x, int n) {
    for (int i = 0; i < n; i++)
        x[i] = 3.0 * x[i] + x[i] * x[i];
}

/* writes out_i = exp(x_i) and returns sum out_i */
static double exp_sum(const double *x, double *out, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        out[i] = exp(x[i]);
        s += out[i];
    }
    return s;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8; /* 9 */
    double x[NMAX], dx[NMAX], out[NMAX], dout[NMAX], w[NMAX], t[NMAX], x0[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = x[i] = 0.7 * sin(1.5 * i) - 0.2;
        w[i] = 2.0 - 0.2 * i;
        t[i] = 0.3 + 0.05 * i;
    }
    for (int i = 0; i < n; i++) { dx[i] = 0.0; dout[i] = w[i]; }
    __enzyme_autodiff((void *)square_into, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout, n);
    for (int i = 0; i < n; i++) {
        check("square_into dx (out dupnoneed)", i, dx[i], 2.0 * x[i] * w[i], TOL);
        check("square_into dout zeroed", i, dout[i], 0.0, TOL);
    }
    for (int i = 0; i < n; i++) dout[i] = 0.0;
    __enzyme_fwddiff((void *)square_into, enzyme_dup, x, t, enzyme_dupnoneed, out, dout, n);
    for (int i = 0; i < n; i++)
        check("square_into forward (out dupnoneed)", i, dout[i], 2.0 * x[i] * t[i], TOL);

    /* in place, input marked dupnoneed: only the gradient w.r.t. the original x is checked */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = w[i]; }
    __enzyme_autodiff((void *)poly_inplace, enzyme_dupnoneed, x, dx, n);
    for (int i = 0; i < n; i++)
        check("poly_inplace dx (dupnoneed)", i, dx[i], w[i] * (3.0 + 2.0 * x0[i]), TOL);
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = w[i]; }
    __enzyme_autodiff((void *)poly_inplace, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        check("poly_inplace dx (dup)", i, dx[i], w[i] * (3.0 + 2.0 * x0[i]), TOL);
        check("poly_inplace primal (dup)", i, x[i], 3.0 * x0[i] + x0[i] * x0[i], TOL);
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    __enzyme_fwddiff((void *)poly_inplace, enzyme_dupnoneed, x, dx, n);
    for (int i = 0; i < n; i++)
        check("poly_inplace forward (dupnoneed)", i, dx[i], (3.0 + 2.0 * x0[i]) * t[i], TOL);

    /* a scalar result plus an output array whose primal is not needed:
       d/dx_i = exp(x_i) (the return) + w_i exp(x_i) (the seeded output) */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; dout[i] = w[i]; }
    __enzyme_autodiff((void *)exp_sum, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("exp_sum dx (out dupnoneed)", i, dx[i], (1.0 + w[i]) * exp(x0[i]), TOL);
        check("exp_sum dout zeroed", i, dout[i], 0.0, TOL);
        fwd += exp(x0[i]) * t[i];
    }
    for (int i = 0; i < n; i++) dout[i] = 0.0;
    check("exp_sum forward (out dupnoneed)", n, __enzyme_fwddiff((void *)exp_sum, enzyme_dup, x, t, enzyme_dupnoneed, out, dout, n), fwd, TOL);
    for (int i = 0; i < n; i++)
        check("exp_sum forward out tangent", i, dout[i], exp(x0[i]) * t[i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
