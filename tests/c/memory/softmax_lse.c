/* Softmax and log-sum-exp with the max subtracted for stability (a data-dependent max whose derivative cancels), cross-entropy with an int label; softmax into an *out array; reverse and forward. */
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

static double lse(const double *x, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > m)
            m = x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m);
    return m + log(s);
}

static void softmax(const double *x, double *p, int n) {
    double m = x[0];
    for (int i = 1; i < n; i++)
        m = fmax(m, x[i]);
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        p[i] = exp(x[i] - m);
        s += p[i];
    }
    for (int i = 0; i < n; i++)
        p[i] /= s;
}

static double xent(const double *x, int label, int n) {
    return lse(x, n) - x[label];
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6, label = argc + 1; /* 7 classes, label 2 */
    double x[NMAX], dx[NMAX], t[NMAX], p[NMAX], q[NMAX], dq[NMAX], w[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 2.0 * sin(1.3 * i) + 0.5;
        t[i] = 0.2 * i - 0.5;
        w[i] = 1.0 + 0.5 * (i % 3);
    }
    double s = 0.0, pt = 0.0, pw = 0.0;
    for (int i = 0; i < n; i++) s += exp(x[i]);
    for (int i = 0; i < n; i++) { p[i] = exp(x[i]) / s; pt += p[i] * t[i]; pw += p[i] * w[i]; }

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)lse, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) check("lse dx = softmax", i, dx[i], p[i], TOL);
    check("lse forward", n, __enzyme_fwddiff((void *)lse, enzyme_dup, x, t, n), pt, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)xent, enzyme_dup, x, dx, label, n);
    for (int i = 0; i < n; i++) check("xent dx = p - onehot", i, dx[i], p[i] - (i == label), TOL);
    check("xent forward", n, __enzyme_fwddiff((void *)xent, enzyme_dup, x, t, label, n), pt - t[label], TOL);

    /* softmax: dx = p (w - p.w); the output shadow is zeroed */
    for (int i = 0; i < n; i++) { dx[i] = 0.0; dq[i] = w[i]; }
    __enzyme_autodiff((void *)softmax, enzyme_dup, x, dx, enzyme_dup, q, dq, n);
    for (int i = 0; i < n; i++) {
        check("softmax dx", i, dx[i], p[i] * (w[i] - pw), TOL);
        check("softmax dq zeroed", i, dq[i], 0.0, TOL);
        check("softmax primal", i, q[i], p[i], TOL);
    }
    for (int i = 0; i < n; i++) dq[i] = 0.0;
    __enzyme_fwddiff((void *)softmax, enzyme_dup, x, t, enzyme_dup, q, dq, n);
    for (int i = 0; i < n; i++) check("softmax forward", i, dq[i], p[i] * (t[i] - pt), TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
