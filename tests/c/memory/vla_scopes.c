/* Variable-length arrays, whose storage ends at the end of their scope (llvm.stackrestore), read by
   the reverse sweep after that (issue 23 item 3): a VLA copied from x (loop and memcpy) that feeds
   only a dead sum next to an unrelated output, a VLA that feeds the result, a VLA declared in a
   loop body; reverse and forward. Before the stackrestore moved to the reverse sweep, these read
   freed stack (NaN, uninitialised values under valgrind, a crash at -O0). */
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

/* out_j = a x_{(j+1) % n}; the VLA only feeds a dead sum */
static void dead_copy_loop(const double *x, double *out, double a, int n) {
    double v[n];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        v[i] = x[i];
    for (int i = 0; i < n; i++)
        s += sin(v[i]);
    (void)s;
    for (int j = 0; j < n; j++)
        out[j] = a * x[(j + 1) % n];
}

/* the same with memcpy into the VLA */
static void dead_copy_memcpy(const double *x, double *out, int n) {
    double v[n];
    double s = 0.0;
    memcpy(v, x, n * sizeof(double));
    for (int i = 0; i < n; i++)
        s += sin(v[i]);
    (void)s;
    for (int j = 0; j < n; j++)
        out[j] = 0.7 * x[(j + 1) % n];
}

/* v = x^2 in a VLA; r = sum v_i sin(x_i) */
static double live_vla(const double *x, int n) {
    double v[n];
    memcpy(v, x, n * sizeof(double));
    for (int i = 0; i < n; i++)
        v[i] = v[i] * v[i];
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += v[i] * sin(x[i]);
    return r;
}

/* a VLA of i + 1 entries per iteration: w_k = x_i (k + 1), r += sum_k w_k^2 = x_i^2 S(i) */
static double vla_in_loop(const double *x, int n) {
    double r = 0.0;
    for (int i = 0; i < n; i++) {
        double w[i + 1];
        for (int k = 0; k <= i; k++)
            w[k] = x[i] * (k + 1.0);
        for (int k = 0; k <= i; k++)
            r += w[k] * w[k];
    }
    return r;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4; /* 5 */
    double x[NMAX], dx[NMAX], t[NMAX], out[NMAX], dout[NMAX];
    for (int i = 0; i < n; i++) { x[i] = 0.4 + 0.15 * i; t[i] = 0.3 - 0.1 * i; }

    for (int i = 0; i < n; i++) { dx[i] = 0.0; dout[i] = 1.0 + i; }
    double da = __enzyme_autodiff((void *)dead_copy_loop, enzyme_dup, x, dx, enzyme_dup, out, dout, 0.7, n);
    double want_da = 0.0;
    for (int j = 0; j < n; j++) want_da += (1.0 + j) * x[(j + 1) % n];
    for (int i = 0; i < n; i++)
        check("dead_copy_loop dx", i, dx[i], 0.7 * (1.0 + (i + n - 1) % n), TOL); /* i = (j+1) % n */
    check("dead_copy_loop da", n, da, want_da, TOL);
    for (int i = 0; i < n; i++) dout[i] = 9.0;
    __enzyme_fwddiff((void *)dead_copy_loop, enzyme_dup, x, t, enzyme_dup, out, dout, 0.7, 1.0, n);
    for (int j = 0; j < n; j++)
        check("dead_copy_loop forward", j, dout[j], 0.7 * t[(j + 1) % n] + x[(j + 1) % n], TOL);

    for (int i = 0; i < n; i++) { dx[i] = 0.0; dout[i] = 1.0 + i; }
    __enzyme_autodiff((void *)dead_copy_memcpy, enzyme_dup, x, dx, enzyme_dup, out, dout, n);
    for (int i = 0; i < n; i++)
        check("dead_copy_memcpy dx", i, dx[i], 0.7 * (1.0 + (i + n - 1) % n), TOL);

    double fwd = 0.0;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)live_vla, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        double want = 2.0 * x[i] * sin(x[i]) + x[i] * x[i] * cos(x[i]);
        check("live_vla dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("live_vla forward", n, __enzyme_fwddiff((void *)live_vla, enzyme_dup, x, t, n), fwd, TOL);

    fwd = 0.0;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)vla_in_loop, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        double squares = (i + 1.0) * (i + 2.0) * (2.0 * i + 3.0) / 6.0; /* sum_{k=1}^{i+1} k^2 */
        check("vla_in_loop dx", i, dx[i], 2.0 * x[i] * squares, TOL);
        fwd += 2.0 * x[i] * squares * t[i];
    }
    check("vla_in_loop forward", n, __enzyme_fwddiff((void *)vla_in_loop, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
