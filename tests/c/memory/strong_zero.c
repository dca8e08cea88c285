/* Strong zeros (issue 23 item 2): an intermediate that does not influence the result adds
   nothing to the derivative, even where its partial is infinite (sqrt at 0, a division by
   zero, log of 0); where the derivative itself is infinite it stays infinite. Reverse and
   forward mode; through branches, selects and memory. Built with --no-strong-zero, the
   checks marked IEEE would see NaN (tests/python/test_strong_zero.py checks that). */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = isinf(want) ? got == want : fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s got %-24.17g want %-24.17g\n", ok ? "ok" : "FAIL", what, got, want);
}

#define TOL 1e-10

/* sum of sqrt(x_i) over the entries whose root exceeds 1e-6: locally constant in a zero x_i */
static double thresholded_roots(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double d = sqrt(x[i]);
        if (d > 1e-6)
            s += d;
    }
    return s;
}

/* Lennard-Jones-like pair energy over all pairs (i, j), the diagonal (zero distance)
   skipped after the distance is computed */
static double pair_energy(const double *x, int n) {
    double e = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double r = sqrt((x[i] - x[j]) * (x[i] - x[j]) + 0.0);
            double inv = 1.0 / r;
            double inv6 = inv * inv * inv * inv * inv * inv;
            e += r > 0.0 ? inv6 : 0.0;
        }
    return e;
}

/* a quotient stored in scratch memory and never read back into the result */
static double unused_quotient(const double *x, double *scratch, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        scratch[i] = x[0] / x[i];
        s += x[i] * x[i];
    }
    return s + (scratch[n - 1] > 1e300 ? 1.0 : 0.0);
}

/* log of a zero weight, multiplied in a branch that is not taken */
static double log_weights(double a, double w) {
    double l = log(w);
    double t = a * l;
    return w > 0.0 ? t : a * a;
}

/* sqrt at 0 really has an infinite derivative: it must stay infinite */
static double plain_root(double x) { return sqrt(x); }

int main(void) {
    double x[3] = {0.0, 4.0, 9.0}, dx[3] = {0, 0, 0};
    __enzyme_autodiff((void *)thresholded_roots, enzyme_dup, x, dx, enzyme_const, 3);
    check("thresholded_roots d/dx0 (IEEE: nan)", dx[0], 0.0, TOL);
    check("thresholded_roots d/dx1", dx[1], 0.25, TOL);
    check("thresholded_roots d/dx2", dx[2], 1.0 / 6.0, TOL);
    double t[3] = {1.0, 0.0, 0.0};
    double fwd = __enzyme_fwddiff((void *)thresholded_roots, enzyme_dup, x, t, enzyme_const, 3);
    check("thresholded_roots fwd e0 (IEEE: nan)", fwd, 0.0, TOL);
    double t1[3] = {0.0, 1.0, 0.0};
    fwd = __enzyme_fwddiff((void *)thresholded_roots, enzyme_dup, x, t1, enzyme_const, 3);
    check("thresholded_roots fwd e1 (IEEE: nan)", fwd, 0.25, TOL);

    double p[3] = {0.0, 1.0, 2.5}, dp[3] = {0, 0, 0};
    __enzyme_autodiff((void *)pair_energy, enzyme_dup, p, dp, enzyme_const, 3);
    /* d/dp_k of sum over ordered pairs of |p_i - p_j|^-6: -12 sum_j sign(p_k - p_j) |p_k - p_j|^-7 */
    for (int k = 0; k < 3; k++) {
        double want = 0.0;
        for (int j = 0; j < 3; j++)
            if (j != k) {
                double d = p[k] - p[j];
                want += -12.0 * (d > 0 ? 1.0 : -1.0) * pow(fabs(d), -7.0);
            }
        check(k == 0 ? "pair_energy d/dp0 (IEEE: nan)" : k == 1 ? "pair_energy d/dp1 (IEEE: nan)"
                                                                 : "pair_energy d/dp2 (IEEE: nan)",
              dp[k], want, 1e-9);
    }

    double q[3] = {1.5, 0.0, 2.0}, dq[3] = {0, 0, 0}, scratch[3], dscratch[3] = {0, 0, 0};
    __enzyme_autodiff((void *)unused_quotient, enzyme_dup, q, dq, enzyme_dup, scratch, dscratch, enzyme_const, 3);
    check("unused_quotient d/dq0 (IEEE: nan)", dq[0], 3.0, TOL);
    check("unused_quotient d/dq1 (IEEE: nan)", dq[1], 0.0, TOL);
    check("unused_quotient d/dq2", dq[2], 4.0, TOL);

    double da = __enzyme_autodiff((void *)log_weights, 1.5, enzyme_const, 0.0);
    check("log_weights d/da, w = 0 (IEEE: nan)", da, 3.0, TOL);
    da = __enzyme_fwddiff((void *)log_weights, 1.5, 1.0, enzyme_const, 0.0);
    check("log_weights fwd d/da, w = 0 (IEEE: nan)", da, 3.0, TOL);
    da = __enzyme_autodiff((void *)log_weights, 1.5, enzyme_const, 2.0);
    check("log_weights d/da, w = 2", da, log(2.0), TOL);

    check("sqrt'(0) stays infinite", __enzyme_autodiff((void *)plain_root, 0.0), INFINITY, 0.0);
    check("sqrt'(0) stays infinite, forward", __enzyme_fwddiff((void *)plain_root, 0.0, 1.0), INFINITY, 0.0);
    check("sqrt'(4)", __enzyme_autodiff((void *)plain_root, 4.0), 0.25, TOL);

    printf("%s\n", failures ? "FAILED" : "all passed");
    return failures != 0;
}
