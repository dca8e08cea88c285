/* Piecewise-linear interpolation in a table found by a binary-search while loop (data-dependent index): derivatives w.r.t. the table values (dup), the knots (dup or const) and the query point (active scalar); a batch into an *out array; reverse and forward. */
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

static double interp(const double *xs, const double *ys, int n, double t) {
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (xs[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double th = (t - xs[lo]) / (xs[hi] - xs[lo]);
    return ys[lo] + th * (ys[hi] - ys[lo]);
}

static void interp_many(const double *xs, const double *ys, int n, const double *t, double *out, int m) {
    for (int k = 0; k < m; k++)
        out[k] = interp(xs, ys, n, t[k]);
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8, m = argc + 3; /* 9 knots, 4 queries */
    double xs[NMAX], ys[NMAX], dxs[NMAX], dys[NMAX], tys[NMAX], q[NMAX], dq[NMAX], out[NMAX], dout[NMAX];
    for (int i = 0; i < n; i++) {
        xs[i] = i + 0.3 * sin(i);          /* increasing */
        ys[i] = cos(0.9 * i) + 0.1 * i * i;
        tys[i] = 0.1 * i - 0.2;
    }
    static const double ts[] = {0.35, 2.6, 4.45, 7.2};
    for (int k = 0; k < 4; k++) {
        double tq = ts[k];
        int lo = 0;
        while (lo + 2 < n && xs[lo + 1] <= tq) lo++;
        int hi = lo + 1;
        double h = xs[hi] - xs[lo], th = (tq - xs[lo]) / h, dy = ys[hi] - ys[lo];
        for (int i = 0; i < n; i++) dxs[i] = dys[i] = 0.0;
        double dt = __enzyme_autodiff((void *)interp, enzyme_dup, xs, dxs, enzyme_dup, ys, dys, n, tq);
        check("interp d/dt", tq, dt, dy / h, TOL);
        for (int i = 0; i < n; i++) {
            check("interp d/dys", i, dys[i], i == lo ? 1.0 - th : i == hi ? th : 0.0, TOL);
            check("interp d/dxs", i, dxs[i], i == lo ? dy * (th - 1.0) / h : i == hi ? -dy * th / h : 0.0, TOL);
        }
        for (int i = 0; i < n; i++) dys[i] = 0.0;
        __enzyme_autodiff((void *)interp, enzyme_const, xs, enzyme_dup, ys, dys, n, enzyme_const, tq);
        check("interp d/dys[lo] (xs, t const)", tq, dys[lo], 1.0 - th, TOL);
        check("interp d/dys[hi] (xs, t const)", tq, dys[hi], th, TOL);
        check("interp forward (ys, t)", tq,
              __enzyme_fwddiff((void *)interp, enzyme_const, xs, enzyme_dup, ys, tys, n, tq, 0.5),
              (1.0 - th) * tys[lo] + th * tys[hi] + 0.5 * dy / h, TOL);
    }

    for (int k = 0; k < m; k++) { q[k] = ts[k]; dq[k] = 0.0; dout[k] = 1.0 + k; }
    for (int i = 0; i < n; i++) dys[i] = 0.0;
    __enzyme_autodiff((void *)interp_many, enzyme_const, xs, enzyme_dup, ys, dys, n, enzyme_dup, q, dq, enzyme_dup, out, dout, m);
    for (int k = 0; k < m; k++) {
        int lo = 0;
        while (lo + 2 < n && xs[lo + 1] <= q[k]) lo++;
        double slope = (ys[lo + 1] - ys[lo]) / (xs[lo + 1] - xs[lo]);
        check("interp_many dq", k, dq[k], (1.0 + k) * slope, TOL);
        check("interp_many dout zeroed", k, dout[k], 0.0, TOL);
    }
    double sum = 0.0, want = 0.0;
    for (int i = 0; i < n; i++) sum += dys[i];
    for (int k = 0; k < m; k++) want += 1.0 + k; /* each query spreads its seed over two knots */
    check("interp_many sum dys", m, sum, want, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
