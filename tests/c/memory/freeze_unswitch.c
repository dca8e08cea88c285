/* Loop unswitching at -O3 on a condition read from memory freezes the loaded value
   (llvm.freeze), and the frozen value also feeds the arithmetic (issue 23 item 5): freeze passes
   tangents and adjoints through unchanged. An early return inside the loop, a product and an
   if/else on x[0]; reverse and forward. Refused ("no derivative rule for llvm.freeze") at -O3
   before. */
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

/* with x0 > 1 and x_i > 0: returns s = x0^2 at i = 1; else s = x0^2 + x0 sum_{i>=1} x_i */
static double early_sum(const double *x, int n) {
    double s = x[0] * x[0];
    for (int i = 1; i < n; i++) {
        if (x[0] > 1.0) {
            if (s > 0.0)
                return s;
        }
        s += x[i] * x[0];
    }
    return s;
}

/* s_i = x_0 + ... + x_i; m = sum_i s_i x0 if x0 > 0, else -sum_i s_i */
static double scaled_if(const double *x, int n) {
    double s = 0.0, m = 0.0;
    for (int i = 0; i < n; i++) {
        s += x[i];
        if (x[0] > 0.0)
            m += s * x[0];
        else
            m -= s;
    }
    return m;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4; /* 5 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) t[i] = 0.2 * i - 0.3;

    for (int pass = 0; pass < 2; pass++) { /* x0 = 1.5 returns early; x0 = 0.5 runs through */
        for (int i = 0; i < n; i++) { x[i] = (pass == 0 ? 1.5 : 0.5) + 0.1 * i; dx[i] = 0.0; }
        __enzyme_autodiff((void *)early_sum, enzyme_dup, x, dx, n);
        double rest = 0.0;
        for (int i = 1; i < n; i++) rest += x[i];
        double fwd = 0.0;
        for (int i = 0; i < n; i++) {
            double want = pass == 0 ? (i == 0 ? 2.0 * x[0] : 0.0) : (i == 0 ? 2.0 * x[0] + rest : x[0]);
            check(pass == 0 ? "early_sum dx (returns)" : "early_sum dx (runs)", i, dx[i], want, TOL);
            fwd += want * t[i];
        }
        check("early_sum forward", x[0], __enzyme_fwddiff((void *)early_sum, enzyme_dup, x, t, n), fwd, TOL);
    }

    for (int pass = 0; pass < 2; pass++) { /* x0 > 0, then x0 < 0 */
        for (int i = 0; i < n; i++) { x[i] = (pass == 0 ? 0.7 : -0.7) + 0.1 * i; dx[i] = 0.0; }
        __enzyme_autodiff((void *)scaled_if, enzyme_dup, x, dx, n);
        double sum_s = 0.0, s = 0.0;
        for (int i = 0; i < n; i++) { s += x[i]; sum_s += s; }
        double fwd = 0.0;
        for (int i = 0; i < n; i++) {
            /* x_i appears in s_i .. s_{n-1}: n - i times */
            double want = pass == 0 ? x[0] * (n - i) + (i == 0 ? sum_s : 0.0) : -(double)(n - i);
            check(pass == 0 ? "scaled_if dx (x0 > 0)" : "scaled_if dx (x0 < 0)", i, dx[i], want, TOL);
            fwd += want * t[i];
        }
        check("scaled_if forward", x[0], __enzyme_fwddiff((void *)scaled_if, enzyme_dup, x, t, n), fwd, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
