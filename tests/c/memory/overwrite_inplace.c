/* Inputs overwritten in place before being read again (x[i] = x[i]*x[i], a sweep reading updated neighbours): the gradient is w.r.t. the original input; the primal overwrite is visible after the call; forward tangents of the overwritten array. */
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

/* x_i <- x_i^2, then x_i <- exp(-x_i); return sum c_i x_i */
static double square_then_sum(double *x, const double *c, int n) {
    for (int i = 0; i < n; i++)
        x[i] = x[i] * x[i];
    for (int i = 0; i < n; i++)
        x[i] = exp(-x[i]);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += c[i] * x[i];
    return s;
}

/* y_0 = x_0, y_i = sin(x_i) + y_{i-1} / 2 written over x; return sum y_i^2 */
static double sweep(double *x, int n) {
    for (int i = 1; i < n; i++)
        x[i] = sin(x[i]) + 0.5 * x[i - 1];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8; /* 9 */
    double x0[NMAX], x[NMAX], dx[NMAX], c[NMAX], t[NMAX], y[NMAX], lam[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = 0.9 * cos(1.3 * i) + 0.05 * i;
        c[i] = 1.0 + 0.3 * i;
        t[i] = 0.5 - 0.15 * (i % 5);
    }

    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)square_then_sum, enzyme_dup, x, dx, enzyme_const, c, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = c[i] * exp(-x0[i] * x0[i]) * -2.0 * x0[i];
        check("square_then_sum dx (original x)", i, dx[i], want, TOL);
        check("square_then_sum primal overwrite", i, x[i], exp(-x0[i] * x0[i]), TOL);
        fwd += want * t[i];
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    check("square_then_sum forward", n, __enzyme_fwddiff((void *)square_then_sum, enzyme_dup, x, dx, enzyme_const, c, n), fwd, TOL);
    for (int i = 0; i < n; i++)
        check("forward shadow = tangent of exp(-x^2)", i, dx[i], exp(-x0[i] * x0[i]) * -2.0 * x0[i] * t[i], TOL);

    /* sweep: lam_i = 2 y_i + lam_{i+1} / 2; dx_i = lam_i cos(x_i) (i >= 1), dx_0 = lam_0 */
    y[0] = x0[0];
    for (int i = 1; i < n; i++) y[i] = sin(x0[i]) + 0.5 * y[i - 1];
    for (int i = n - 1; i >= 0; i--) lam[i] = 2.0 * y[i] + (i + 1 < n ? 0.5 * lam[i + 1] : 0.0);
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)sweep, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = i == 0 ? lam[0] : lam[i] * cos(x0[i]);
        check("sweep dx", i, dx[i], want, TOL);
        check("sweep primal overwrite", i, x[i], y[i], TOL);
        fwd += want * t[i];
    }
    /* forward: ty_i = cos(x_i) t_i + ty_{i-1} / 2 ends in the shadow */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    check("sweep forward", n, __enzyme_fwddiff((void *)sweep, enzyme_dup, x, dx, n), fwd, TOL);
    double ty = t[0];
    for (int i = 0; i < n; i++) {
        if (i > 0) ty = cos(x0[i]) * t[i] + 0.5 * ty;
        check("sweep forward shadow", i, dx[i], ty, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
