/* memcpy of structs that mix an active double with a pointer to active data
   (issue 23 item 4): an array of { double w; double *p; } copied whole with memcpy,
   and one struct at a time by assignment. In reverse mode the copy's forward sweep must
   copy the shadow pointers, and its reverse must move adjoints over the double fields
   only; zymase used to run the float adjoint over the pointer bytes too (a segfault at
   -O0). Reverse and forward against closed forms. */
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
#define K 4

struct item {
    double w;
    double *p;
};

/* sum_i w_i * p_i[0] with w_i = (i + 1) x_i, p_i = x + i: sum (i + 1) x_i^2 over i < K */
static double copied_whole(double *x) {
    struct item src[K], dst[K];
    for (int i = 0; i < K; i++) {
        src[i].w = (i + 1) * x[i];
        src[i].p = x + i;
    }
    memcpy(dst, src, sizeof src);
    double s = 0.0;
    for (int i = 0; i < K; i++) s += dst[i].w * *dst[i].p;
    return s;
}

/* the same through struct assignment, reversed: w_i = x_i^2, p_i = x + (K - 1 - i) */
static double copied_by_field(double *x) {
    struct item src[K], dst[K];
    for (int i = 0; i < K; i++) {
        src[i].w = x[i] * x[i];
        src[i].p = x + (K - 1 - i);
    }
    for (int i = 0; i < K; i++) dst[K - 1 - i] = src[i];
    double s = 0.0;
    for (int i = 0; i < K; i++) s += dst[i].w * *dst[i].p;
    return s;
}

int main(void) {
    double x[K], dx[K], tx[K];
    for (int i = 0; i < K; i++) {
        x[i] = 0.4 + 0.3 * i;
        tx[i] = 1.0 - 0.25 * i;
        dx[i] = 0.0;
    }

    __enzyme_autodiff((void *)copied_whole, enzyme_dup, x, dx);
    double fwd = 0.0;
    for (int i = 0; i < K; i++) {
        check("copied_whole d/dx", i, dx[i], 2.0 * (i + 1) * x[i], TOL);
        fwd += 2.0 * (i + 1) * x[i] * tx[i];
        dx[i] = 0.0;
    }
    check("copied_whole forward", K, __enzyme_fwddiff((void *)copied_whole, enzyme_dup, x, tx), fwd, TOL);

    /* dst[j] = src[K-1-j]: s = sum_i x_i^2 x_{K-1-i}; d/dx_k = 2 x_k x_{K-1-k} + x_{K-1-k}^2 */
    __enzyme_autodiff((void *)copied_by_field, enzyme_dup, x, dx);
    fwd = 0.0;
    for (int k = 0; k < K; k++) {
        double m = x[K - 1 - k], want = 2.0 * x[k] * m + m * m;
        check("copied_by_field d/dx", k, dx[k], want, TOL);
        fwd += want * tx[k];
    }
    check("copied_by_field forward", K, __enzyme_fwddiff((void *)copied_by_field, enzyme_dup, x, tx), fwd, TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
