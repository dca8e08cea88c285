/* Second derivatives of functions that keep state in globals (an accumulator, an array
   smoothed in place), in all four mode pairs. Each marker round used the same shadow
   global for a global, so the outer derivative's adjoints of `acc` were mixed into the
   inner derivative's (which the outer one reads and writes as primal memory): reverse
   over reverse and reverse over forward were silently wrong (2.7 and 3 for 2, session
   31). Now each round makes its own shadow. Against closed forms; the state is set
   before each call. */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures;

static void check(const char *what, double got, double want) {
    int ok = fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%-4s %-40s got %-24.17g want %.17g\n", ok ? "ok" : "FAIL", what, got, want);
}

static double acc;
static double f(double x) { acc += x; return acc * x; } /* (a0 + x) x */
static double d_rev(double x) { acc = 0.25; return __enzyme_autodiff((void *)f, x); }
static double d_fwd(double x) { acc = 0.25; return __enzyme_fwddiff((void *)f, x, 1.0); }

enum { N = 4 };
static double G[N];
/* G_i <- G_i / 2 + x_i^2, then sum_i G_i sin x_i: d2/dx_i2 = 2 sin + 4 x cos - (G0/2 + x^2) sin */
static double smooth(double *x) {
    for (int i = 0; i < N; i++) G[i] = 0.5 * G[i] + x[i] * x[i];
    double s = 0.0;
    for (int i = 0; i < N; i++) s += G[i] * sin(x[i]);
    return s;
}
static double g0(int i) { return 0.1 * (i + 1); }
/* d smooth / d x_j by reverse mode, from a set state */
static double grad_j(double *x, int j) {
    for (int i = 0; i < N; i++) G[i] = g0(i);
    double g[N] = {0}, xc[N];
    for (int i = 0; i < N; i++) xc[i] = x[i];
    __enzyme_autodiff((void *)smooth, enzyme_dup, xc, g);
    return g[j];
}

int main(void) {
    double x = 0.7;
    check("reverse over reverse, accumulator", __enzyme_autodiff((void *)d_rev, x), 2.0);
    check("forward over reverse, accumulator", __enzyme_fwddiff((void *)d_rev, x, 1.0), 2.0);
    check("reverse over forward, accumulator", __enzyme_autodiff((void *)d_fwd, x), 2.0);
    check("forward over forward, accumulator", __enzyme_fwddiff((void *)d_fwd, x, 1.0), 2.0);
    double v[N] = {0.3, -0.8, 1.1, 0.45};
    for (int j = 0; j < N; j++) {
        double h[N] = {0};
        __enzyme_autodiff((void *)grad_j, enzyme_dup, v, h, enzyme_const, j);
        double q = 0.5 * g0(j) + v[j] * v[j];
        double want = 2 * sin(v[j]) + 4 * v[j] * cos(v[j]) - q * sin(v[j]);
        for (int i = 0; i < N; i++) check("reverse over reverse, smoothed array", h[i], i == j ? want : 0.0);
        double t[N] = {0};
        t[j] = 1.0;
        check("forward over reverse, smoothed array",
              __enzyme_fwddiff((void *)grad_j, enzyme_dup, v, t, enzyme_const, j), want);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
