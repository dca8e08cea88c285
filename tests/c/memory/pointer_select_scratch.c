/* Memory-heavy shapes of the fuzzer's pointer-select variant (issue 23 item 7): stack arrays chosen
   by a pointer select (on an int, on the sign of an input), cleared with memset or initialized with
   `= {0}`, copied with memcpy in both directions, read by the reverse sweep after their scope. At
   -O2/-O3 reverse mode disagreed with forward mode and finite differences: the reverse sweep read
   the arrays after the primal's llvm.lifetime.end (item 1). Checked against closed forms and, for
   sign_routed, a hand tangent recurrence (each reverse component from one unit direction). */
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
#define NMAX 8

/* two rounds; in each a scoped zeroed array or a scaled copy of x is picked:
   s = sum_{k < 2, (k + c) even} (k + 1) sum_i x_i^2 */
static double scoped_pick(const double *x, int n, int c) {
    double s = 0.0;
    for (int k = 0; k < 2; k++) {
        double a[NMAX], b[NMAX];
        memset(a, 0, sizeof a);
        for (int i = 0; i < n; i++)
            b[i] = x[i] * (k + 1);
        const double *p = (k + c) % 2 ? a : b;
        for (int i = 0; i < n; i++)
            s += p[i] * x[i];
    }
    return s;
}

/* memcpy between two arrays picked by c, then the source cleared:
   c != 0: s = sum x_i cos x_i; c == 0: s = 0 */
static double copy_then_clear(const double *x, int n, int c) {
    double a[NMAX], b[NMAX];
    memset(b, 0, sizeof b);
    for (int i = 0; i < n; i++)
        a[i] = cos(x[i]);
    double *p = c ? a : b, *q = c ? b : a;
    memcpy(q, p, sizeof(double) * n);
    for (int i = 0; i < n; i++)
        p[i] = 0.0;
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += q[i] * x[i] + p[i];
    return s;
}

/* entries routed to a or b by the sign of x_i, overwritten and accumulated, then the arrays
   swapped through a third one with memcpy */
static double sign_routed(const double *x, int n, int c) {
    double a[NMAX] = {0}, b[NMAX] = {0};
    for (int i = 0; i < n; i++) {
        double *p = x[i] > 0 ? a : b;
        double *q = x[i] > 0 ? b : a;
        p[i] = x[i] * x[i];
        q[(i + c) % n] += p[i];
    }
    double t[NMAX];
    memcpy(t, a, sizeof t);
    memcpy(a, b, sizeof a);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += t[i] * a[i] + b[i];
    return s;
}

/* sign_routed with (value, tangent) pairs along the direction tx */
static double sign_routed_tangent(const double *x, const double *tx, int n, int c) {
    double a[NMAX] = {0}, b[NMAX] = {0}, da[NMAX] = {0}, db[NMAX] = {0};
    for (int i = 0; i < n; i++) {
        int pos = x[i] > 0;
        double *p = pos ? a : b, *dp = pos ? da : db;
        double *q = pos ? b : a, *dq = pos ? db : da;
        p[i] = x[i] * x[i];
        dp[i] = 2.0 * x[i] * tx[i];
        q[(i + c) % n] += p[i];
        dq[(i + c) % n] += dp[i];
    }
    double ds = 0.0;
    for (int i = 0; i < n; i++) /* t = a, then a = b: s = sum a_i b_i + b_i */
        ds += da[i] * b[i] + a[i] * db[i] + db[i];
    return ds;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* 6 */
    const double x0[NMAX] = {0.4, -0.7, 1.1, 0.25, -0.35, 0.9, 0.0, 0.0};
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) { x[i] = x0[i]; t[i] = 0.3 - 0.1 * i; }

    for (int c = 0; c < 3; c++) {
        double fwd = 0.0, weight = 0.0;
        for (int k = 0; k < 2; k++)
            weight += (k + c) % 2 ? 0.0 : k + 1.0;
        for (int i = 0; i < n; i++) dx[i] = 0.0;
        __enzyme_autodiff((void *)scoped_pick, enzyme_dup, x, dx, n, c);
        for (int i = 0; i < n; i++) {
            check("scoped_pick dx", 10 * c + i, dx[i], 2.0 * weight * x[i], TOL);
            fwd += 2.0 * weight * x[i] * t[i];
        }
        check("scoped_pick forward", c, __enzyme_fwddiff((void *)scoped_pick, enzyme_dup, x, t, n, c), fwd, TOL);

        fwd = 0.0;
        for (int i = 0; i < n; i++) dx[i] = 0.0;
        __enzyme_autodiff((void *)copy_then_clear, enzyme_dup, x, dx, n, c);
        for (int i = 0; i < n; i++) {
            double want = c ? cos(x[i]) - x[i] * sin(x[i]) : 0.0;
            check("copy_then_clear dx", 10 * c + i, dx[i], want, TOL);
            fwd += want * t[i];
        }
        check("copy_then_clear forward", c, __enzyme_fwddiff((void *)copy_then_clear, enzyme_dup, x, t, n, c), fwd, TOL);

        for (int i = 0; i < n; i++) dx[i] = 0.0;
        __enzyme_autodiff((void *)sign_routed, enzyme_dup, x, dx, n, c);
        for (int k = 0; k < n; k++) {
            double e[NMAX] = {0};
            e[k] = 1.0;
            check("sign_routed dx", 10 * c + k, dx[k], sign_routed_tangent(x, e, n, c), TOL);
        }
        check("sign_routed forward", c, __enzyme_fwddiff((void *)sign_routed, enzyme_dup, x, t, n, c),
              sign_routed_tangent(x, t, n, c), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
