/* Explicit Euler integration of a nonlinear ODE state vector in a buffer over many steps (a malloc'd right-hand side each step), parameters in a dup'd array: reverse (state seeded) and forward against a hand tangent recurrence. */
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

#define H 0.01

/* dy_i/dt = p_i y_{i+1} - y_i^3 / 10 + 1/2 sin(y_{i-1}), cyclic indices */
static void euler(double *y, const double *p, int dim, int steps) {
    double *k = malloc(dim * sizeof(double));
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < dim; i++) {
            double next = y[(i + 1) % dim], prev = y[(i + dim - 1) % dim];
            k[i] = p[i] * next - 0.1 * y[i] * y[i] * y[i] + 0.5 * sin(prev);
        }
        for (int i = 0; i < dim; i++)
            y[i] += H * k[i];
    }
    free(k);
}

#define DMAX 8

/* hand tangent recurrence: the direction (ty, tp) pushed through all steps; the result ends in ty */
static void tangent(const double *y0, const double *p, double *ty, const double *tp, int dim, int steps) {
    double y[DMAX], k[DMAX], tk[DMAX];
    for (int i = 0; i < dim; i++) y[i] = y0[i];
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < dim; i++) {
            int a = (i + 1) % dim, b = (i + dim - 1) % dim;
            k[i] = p[i] * y[a] - 0.1 * y[i] * y[i] * y[i] + 0.5 * sin(y[b]);
            tk[i] = tp[i] * y[a] + p[i] * ty[a] - 0.3 * y[i] * y[i] * ty[i] + 0.5 * cos(y[b]) * ty[b];
        }
        for (int i = 0; i < dim; i++) { y[i] += H * k[i]; ty[i] += H * tk[i]; }
    }
}

int main(int argc, char **argv) {
    (void)argv;
    int dim = argc + 3, steps = 100 * argc + 150; /* 4 states, 250 steps */
    double y0[DMAX], y[DMAX], dy[DMAX], p[DMAX], dp[DMAX], w[DMAX], ty[DMAX], tp[DMAX];
    for (int i = 0; i < dim; i++) {
        y0[i] = 0.5 + 0.3 * i;
        p[i] = 1.0 - 0.4 * i;
        w[i] = 1.0 + 0.25 * i;
    }
    for (int i = 0; i < dim; i++) { y[i] = y0[i]; dy[i] = w[i]; dp[i] = 0.0; }
    __enzyme_autodiff((void *)euler, enzyme_dup, y, dy, enzyme_dup, p, dp, dim, steps);
    /* component j of the gradient = w . (tangent in the unit direction j) */
    for (int j = 0; j < 2 * dim; j++) {
        for (int i = 0; i < dim; i++) { ty[i] = (i == j); tp[i] = (i + dim == j); }
        tangent(y0, p, ty, tp, dim, steps);
        double want = 0.0;
        for (int i = 0; i < dim; i++) want += w[i] * ty[i];
        if (j < dim)
            check("euler d/dy0", j, dy[j], want, TOL);
        else
            check("euler d/dp", j - dim, dp[j - dim], want, TOL);
    }
    /* forward, parameters const */
    double tdir[DMAX], zero[DMAX];
    for (int i = 0; i < dim; i++) { y[i] = y0[i]; tdir[i] = dy[i] = 0.5 - 0.2 * i; zero[i] = 0.0; }
    __enzyme_fwddiff((void *)euler, enzyme_dup, y, dy, enzyme_const, p, dim, steps);
    tangent(y0, p, tdir, zero, dim, steps);
    for (int i = 0; i < dim; i++)
        check("euler forward (p const)", i, dy[i], tdir[i], TOL);
    /* forward in the parameters only: the state tangent starts at zero */
    for (int i = 0; i < dim; i++) { y[i] = y0[i]; dy[i] = 0.0; tp[i] = 0.1 * (i + 1); ty[i] = 0.0; }
    __enzyme_fwddiff((void *)euler, enzyme_dup, y, dy, enzyme_dup, p, tp, dim, steps);
    tangent(y0, p, ty, tp, dim, steps);
    for (int i = 0; i < dim; i++)
        check("euler forward (p tangent)", i, dy[i], ty[i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
