// Second derivatives through an inner gradient whose tape is an indexed cache (issue 25
// Performance, C Hessian-vector product): the inner loop nest runs once per pass of a
// data-dependent outer loop, so its tape grows by realloc run after run while the outer
// derivative shadows it. Hessian-vector products by forward over reverse and by reverse
// over reverse (the gradient of <grad f(x), v>), against central differences of the
// gradient along v.
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;

static double f(const double *x, int n) {
    double s = 0.25;
    for (int t = 0; t < 6 && s < 4.0; t++)        // trip count decided by the values
        for (int i = 0; i < n; i++)               // counted: the nest of the indexed tape
            s = sin(s + x[i] * (t + 1)) + 0.5 * s;  // s before each step is taped
    return s * s;
}

static void grad(const double *x, double *g, int n) {
    for (int i = 0; i < n; i++) g[i] = 0.0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, g, enzyme_const, n);
}

static void hvp_fwd_rev(const double *x, const double *v, double *hv, int n) {
    double g[64];
    __enzyme_fwddiff((void *)grad, enzyme_dup, x, v, enzyme_dupnoneed, g, hv, enzyme_const, n);
}

static double grad_dot(const double *x, const double *v, int n) {
    double g[64], s = 0.0;
    grad(x, g, n);
    for (int i = 0; i < n; i++) s += g[i] * v[i];
    return s;
}

static void hvp_rev_rev(const double *x, const double *v, double *hv, int n) {
    for (int i = 0; i < n; i++) hv[i] = 0.0;
    __enzyme_autodiff((void *)grad_dot, enzyme_dup, x, hv, enzyme_const, v, enzyme_const, n);
}

int main(void) {
    enum { N = 37 };  // not a multiple of any vector width
    double x[N], v[N], a[N], b[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.3 * sin(1.7 * i) - 0.05;
        v[i] = cos(0.9 * i);
    }
    hvp_fwd_rev(x, v, a, N);
    hvp_rev_rev(x, v, b, N);
    int bad = 0;
    double xp[N], xm[N], gp[N], gm[N], h = 1e-6;
    for (int i = 0; i < N; i++) {
        xp[i] = x[i] + h * v[i];
        xm[i] = x[i] - h * v[i];
    }
    grad(xp, gp, N);
    grad(xm, gm, N);
    for (int k = 0; k < N; k++) {
        double fd = (gp[k] - gm[k]) / (2 * h), tol = 1e-6 * (1 + fabs(fd));
        if (fabs(a[k] - fd) > tol || fabs(b[k] - fd) > tol) {
            printf("FAIL hv[%d]: fwd/rev %.12g rev/rev %.12g fd %.12g\n", k, a[k], b[k], fd);
            bad = 1;
        }
    }
    if (!bad) printf("ok\n");
    return bad;
}
