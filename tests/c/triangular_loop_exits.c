/* A value left by a triangular inner loop (its trip count grows with the outer index) read after
   that loop by a second inner loop (issue 23 item 2): reverse mode reused the first outer
   iteration's value of the loop's last index for every outer iteration. Checked against hand
   tangent recurrences, in both modes, with a triangular, a constant and an n-long second loop. */
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

#define TOL 1e-9

/* s1 grows by 0 + 1 + ... + i, then s0 is multiplied by s1 (i + 1) times */
static double two_triangles(double a, int n) {
    double s1 = a, s0 = 1.0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) s1 += j;
        for (int j = 0; j <= i; j++) s0 = s0 * s1;
    }
    return s0;
}

/* the same with a second loop of 2 iterations */
static double triangle_then_two(double a, int n) {
    double s1 = a, s0 = 1.0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) s1 += j;
        for (int j = 0; j < 2; j++) s0 = s0 * s1;
    }
    return s0;
}

/* a damped triangular update, then n multiplications */
static double damped_then_n(double a, int n) {
    double s1 = a, s0 = 1.0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) s1 = 0.5 * s1 + j;
        for (int j = 0; j < n; j++) s0 = s0 * s1;
    }
    return s0;
}

/* tangents by hand: (s1, ds1), (s0, ds0) with d/da */
static double d_two_triangles(double a, int n, int second_kind) {
    double s1 = a, d1 = 1.0, s0 = 1.0, d0 = 0.0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) {
            if (second_kind == 2) { s1 = 0.5 * s1 + j; d1 = 0.5 * d1; }
            else s1 += j;
        }
        int m = second_kind == 0 ? i + 1 : second_kind == 1 ? 2 : n;
        for (int j = 0; j < m; j++) { d0 = d0 * s1 + s0 * d1; s0 = s0 * s1; }
    }
    return d0;
}

int main(int argc, char **argv) {
    (void)argv;
    const double as[] = {0.7, -0.3, 1.1};
    for (int n = argc + 1; n <= argc + 3; n++) { /* 2, 3, 4 */
        for (int k = 0; k < 3; k++) {
            double a = as[k];
            double want = d_two_triangles(a, n, 0);
            check("two_triangles reverse", a, __enzyme_autodiff((void *)two_triangles, a, n), want, TOL);
            check("two_triangles forward", a, __enzyme_fwddiff((void *)two_triangles, a, 1.0, n), want, TOL);
            want = d_two_triangles(a, n, 1);
            check("triangle_then_two reverse", a, __enzyme_autodiff((void *)triangle_then_two, a, n), want, TOL);
            check("triangle_then_two forward", a, __enzyme_fwddiff((void *)triangle_then_two, a, 1.0, n), want, TOL);
            want = d_two_triangles(a, n, 2);
            check("damped_then_n reverse", a, __enzyme_autodiff((void *)damped_then_n, a, n), want, TOL);
            check("damped_then_n forward", a, __enzyme_fwddiff((void *)damped_then_n, a, 1.0, n), want, TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
