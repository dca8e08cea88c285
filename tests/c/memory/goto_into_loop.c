/* Loops with two entries (goto into their body on a data-dependent branch: irreducible
   cycles after mem2reg).
   - two_entries: the body's join is entered straight from the branch on the first turn and
     from the loop on later ones, so the branch's last decision does not name the edge taken
     (reverse mode gave zero derivatives for all but the last turn, silently, at -O1..-O3).
   - two_cycles: two loops jumping into each other; -O1 makes each a natural loop inside a
     cycle with two entries, so each loop runs many times per call, and an indexed cache
     (one run of a loop nest) was overwritten by every run (reverse mode slightly off,
     silently, at -O1..-O3). Checked against a hand tangent recurrence. */
#include <stdio.h>
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

/* x0 > 0: s = sum_i (x_i^2 [i > 0] + x_i) with the first square skipped;
   otherwise s = 1 + sum_i (x_i^2 + x_i) */
static double two_entries(const double *x, int n) {
    double s = 0.0;
    int i = 0;
    if (x[0] > 0.0)
        goto inside;
    s = 1.0;
top:
    if (i >= n)
        goto done;
    s += x[i] * x[i];
inside:
    s = s * 0.5 + sin(x[i]);
    i++;
    goto top;
done:
    return s;
}

/* s goes around A (s = 1.1 s + x_k) until it passes 1.5, then around B
   (s = sin(s) x_{k+1} + 0.7) until it drops under 0.8, ten steps in all */
static double two_cycles(const double *x, int n) {
    double s = 0.1;
    int k = 0;
    if (x[2] > 0.4)
        goto B;
A:
    s = s * 1.1 + x[k % n];
    k++;
    if (k >= 10)
        goto E;
    if (s > 1.5)
        goto B;
    goto A;
B:
    s = sin(s) * x[(k + 1) % n] + 0.7;
    k++;
    if (k >= 10)
        goto E;
    if (s < 0.8)
        goto A;
    goto B;
E:
    return s;
}

/* the tangent of two_cycles along t, step by step on the same path */
static double two_cycles_tangent(const double *x, const double *t, int n) {
    double s = 0.1, ds = 0.0;
    int k = 0, in_a = !(x[2] > 0.4);
    while (k < 10) {
        if (in_a) {
            ds = 1.1 * ds + t[k % n];
            s = s * 1.1 + x[k % n];
            in_a = !(s > 1.5);
        } else {
            int j = (k + 1) % n;
            ds = cos(s) * ds * x[j] + sin(s) * t[j];
            s = sin(s) * x[j] + 0.7;
            in_a = s < 0.8;
        }
        k++;
    }
    return ds;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* 6 */
    for (int sign = 0; sign < 2; sign++) {
        double x[NMAX], dx[NMAX], t[NMAX], w[NMAX];
        for (int i = 0; i < n; i++) {
            x[i] = 0.4 + 0.3 * sin(1.3 * i);
            dx[i] = 0.0;
        }
        if (sign)
            x[0] = -x[0];
        /* s_final = sum_i 0.5^(n-1-i) (0.5 [x_i^2 unless i = 0 and x0 > 0] + sin x_i) */
        w[n - 1] = 1.0;
        for (int i = n - 2; i >= 0; i--)
            w[i] = 0.5 * w[i + 1];
        __enzyme_autodiff((void *)two_entries, enzyme_dup, x, dx, enzyme_const, n);
        for (int i = 0; i < n; i++) {
            int squared = !(i == 0 && x[0] > 0.0);
            double want = w[i] * ((squared ? x[i] : 0.0) + cos(x[i]));
            check(sign ? "reverse, x0 < 0" : "reverse, goto into the loop", x[i], dx[i], want, TOL);
            for (int j = 0; j < n; j++)
                t[j] = j == i ? 1.0 : 0.0;
            double fwd = __enzyme_fwddiff((void *)two_entries, enzyme_dup, x, t, enzyme_const, n);
            check(sign ? "forward, x0 < 0" : "forward, goto into the loop", x[i], fwd, want, TOL);
        }
    }
    for (int start = 0; start < 2; start++) {
        double x[NMAX], dx[NMAX], t[NMAX];
        for (int i = 0; i < n; i++) {
            x[i] = 0.35 + 0.1 * i - 0.02 * i * i;
            dx[i] = 0.0;
        }
        x[2] = start ? 0.55 : 0.3; /* start in B, or in A */
        __enzyme_autodiff((void *)two_cycles, enzyme_dup, x, dx, enzyme_const, n);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++)
                t[j] = j == i ? 1.0 : 0.0;
            double want = two_cycles_tangent(x, t, n);
            check(start ? "reverse, two cycles from B" : "reverse, two cycles from A", x[i], dx[i], want, TOL);
            double fwd = __enzyme_fwddiff((void *)two_cycles, enzyme_dup, x, t, enzyme_const, n);
            check(start ? "forward, two cycles from B" : "forward, two cycles from A", x[i], fwd, want, TOL);
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
