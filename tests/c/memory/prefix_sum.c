/* Prefix sums and prefix products computed in place (the input is overwritten): reverse with the in-place array seeded, a reduction of the prefix sums, forward mode. */
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

static void prefix_sum(double *x, int n) {
    for (int i = 1; i < n; i++)
        x[i] += x[i - 1];
}

/* prefix sums in place, then 1/2 sum S_i^2 */
static double prefix_energy(double *x, int n) {
    for (int i = 1; i < n; i++)
        x[i] += x[i - 1];
    double e = 0.0;
    for (int i = 0; i < n; i++)
        e += 0.5 * x[i] * x[i];
    return e;
}

/* x[i] = x[0] x[1] ... x[i], in place: the reverse sweep needs the overwritten values */
static void prefix_prod(double *x, int n) {
    for (int i = 1; i < n; i++)
        x[i] *= x[i - 1];
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 9; /* 10 */
    double x0[NMAX], x[NMAX], dx[NMAX], w[NMAX], S[NMAX], P[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = 0.8 + 0.3 * sin(1.1 * i);
        w[i] = 1.0 - 0.15 * i;
        t[i] = 0.5 - 0.1 * (i % 4);
    }
    S[0] = x0[0];
    P[0] = x0[0];
    for (int i = 1; i < n; i++) { S[i] = S[i - 1] + x0[i]; P[i] = P[i - 1] * x0[i]; }

    /* y = prefix(x): seed dy = w; after the call dx_j = sum_{i >= j} w_i and x holds the sums */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = w[i]; }
    __enzyme_autodiff((void *)prefix_sum, enzyme_dup, x, dx, n);
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = j; i < n; i++) want += w[i];
        check("prefix_sum dx = suffix sums of w", j, dx[j], want, TOL);
        check("prefix_sum primal", j, x[j], S[j], TOL);
    }
    /* forward: the tangent is scanned too */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    __enzyme_fwddiff((void *)prefix_sum, enzyme_dup, x, dx, n);
    double ts = 0.0;
    for (int j = 0; j < n; j++) {
        ts += t[j];
        check("prefix_sum forward", j, dx[j], ts, TOL);
    }

    /* energy: d/dx_j = sum_{i >= j} S_i, w.r.t. the original x */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)prefix_energy, enzyme_dup, x, dx, n);
    double fwd = 0.0, tsum = 0.0;
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = j; i < n; i++) want += S[i];
        check("prefix_energy dx", j, dx[j], want, TOL);
        tsum += t[j];
        fwd += S[j] * tsum;
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    check("prefix_energy forward", n, __enzyme_fwddiff((void *)prefix_energy, enzyme_dup, x, dx, n), fwd, TOL);

    /* products: P_i = prod_{k <= i} x_k; dx_j = sum_{i >= j} w_i P_i / x_j */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = w[i]; }
    __enzyme_autodiff((void *)prefix_prod, enzyme_dup, x, dx, n);
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = j; i < n; i++) want += w[i] * P[i];
        check("prefix_prod dx", j, dx[j], want / x0[j], TOL);
        check("prefix_prod primal", j, x[j], P[j], TOL);
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    __enzyme_fwddiff((void *)prefix_prod, enzyme_dup, x, dx, n);
    double rel = 0.0;
    for (int j = 0; j < n; j++) {
        rel += t[j] / x0[j];
        check("prefix_prod forward", j, dx[j], P[j] * rel, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
