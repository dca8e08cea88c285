/* Forward mode through scratch memory allocated inside the function (malloc, calloc, a stack buffer): smoothing, prefix-sum moving averages into an *out parameter, exponentials. */
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

/* |S x| with S the (1/4, 1/2, 1/4) smoother (ends clamped), through two malloc'd buffers */
static double smooth_norm(const double *x, int n) {
    double *s = malloc(n * sizeof(double)), *q = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        s[i] = 0.25 * x[i > 0 ? i - 1 : 0] + 0.5 * x[i] + 0.25 * x[i + 1 < n ? i + 1 : n - 1];
    for (int i = 0; i < n; i++)
        q[i] = s[i] * s[i];
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += q[i];
    free(s);
    free(q);
    return sqrt(r);
}

/* out_i = (x_i + ... + x_{i+w-1}) / w through a calloc'd prefix-sum array */
static void moving_avg(const double *x, double *out, int n, int w) {
    double *p = calloc(n + 1, sizeof(double));
    for (int i = 0; i < n; i++)
        p[i + 1] = p[i] + x[i];
    for (int i = 0; i + w <= n; i++)
        out[i] = (p[i + w] - p[i]) / w;
    free(p);
}

/* sum x_i e^{x_i}, the exponentials kept in a stack buffer */
static double xexp(const double *x, int n) {
    double e[64];
    for (int i = 0; i < n; i++)
        e[i] = exp(x[i]);
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += x[i] * e[i];
    return r;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 9, w = argc + 2; /* 10 values, window 3 */
    double x[NMAX], t[NMAX], s[NMAX], out[NMAX], tout[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = cos(0.8 * i) + 0.2 * i;
        t[i] = 1.0 - 0.3 * (i % 4);
    }
    for (int i = 0; i < n; i++)
        s[i] = 0.25 * x[i > 0 ? i - 1 : 0] + 0.5 * x[i] + 0.25 * x[i + 1 < n ? i + 1 : n - 1];
    double norm = 0.0, fwd = 0.0;
    for (int i = 0; i < n; i++) norm += s[i] * s[i];
    norm = sqrt(norm);
    for (int i = 0; i < n; i++) {
        double ts = 0.25 * t[i > 0 ? i - 1 : 0] + 0.5 * t[i] + 0.25 * t[i + 1 < n ? i + 1 : n - 1];
        fwd += s[i] * ts / norm;
    }
    check("smooth_norm forward", n, __enzyme_fwddiff((void *)smooth_norm, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) tout[i] = 0.0;
    __enzyme_fwddiff((void *)moving_avg, enzyme_dup, x, t, enzyme_dup, out, tout, n, w);
    for (int i = 0; i + w <= n; i++) {
        double want = 0.0, prim = 0.0;
        for (int k = i; k < i + w; k++) { want += t[k] / w; prim += x[k] / w; }
        check("moving_avg forward", i, tout[i], want, TOL);
        check("moving_avg primal", i, out[i], prim, TOL);
    }
    for (int i = n - w + 1; i < n; i++)
        check("moving_avg untouched tail", i, tout[i], 0.0, TOL);

    fwd = 0.0;
    for (int i = 0; i < n; i++) fwd += (1.0 + x[i]) * exp(x[i]) * t[i];
    check("xexp forward", n, __enzyme_fwddiff((void *)xexp, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
