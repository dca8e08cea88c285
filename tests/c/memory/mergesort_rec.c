/* Recursive mergesort with a malloc'd scratch buffer: sorting in place with the shadow seeded on sorted positions (the gradient is the inverse permutation), a sorted weighted sum of a copy, forward mode. */
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

static void msort(double *a, double *tmp, int n) {
    if (n < 2)
        return;
    int h = n / 2;
    msort(a, tmp, h);
    msort(a + h, tmp, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    for (k = 0; k < n; k++)
        a[k] = tmp[k];
}

static void sort_inplace(double *x, int n) {
    double *tmp = malloc(n * sizeof(double));
    msort(x, tmp, n);
    free(tmp);
}

/* sum_k w_k exp(s_k / 2) with s = sort(x), x itself untouched */
static double sorted_exp(const double *x, const double *w, int n) {
    double *a = malloc(n * sizeof(double)), *tmp = malloc(n * sizeof(double));
    memcpy(a, x, n * sizeof(double));
    msort(a, tmp, n);
    double r = 0.0;
    for (int k = 0; k < n; k++)
        r += w[k] * exp(0.5 * a[k]);
    free(a);
    free(tmp);
    return r;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 12; /* 13 */
    double x0[NMAX], x[NMAX], dx[NMAX], w[NMAX], t[NMAX];
    int rank[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = 5.0 * fmod(0.41421356 * (i + 1), 1.0) - 2.5;
        w[i] = 1.0 + 0.2 * i;
        t[i] = sin(3.0 * i);
    }
    for (int i = 0; i < n; i++) {
        rank[i] = 0;
        for (int j = 0; j < n; j++) rank[i] += x0[j] < x0[i];
    }
    /* sorted positions seeded with w: dx_i = w[rank_i]; the shadow is permuted like the data */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = w[i]; }
    __enzyme_autodiff((void *)sort_inplace, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        check("sort_inplace dx = w[rank]", i, dx[i], w[rank[i]], TOL);
        check("sort_inplace primal", rank[i], x[rank[i]], x0[i], TOL);
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = t[i]; }
    __enzyme_fwddiff((void *)sort_inplace, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("sort_inplace forward permutes tangent", rank[i], dx[rank[i]], t[i], TOL);

    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)sorted_exp, enzyme_dup, x, dx, enzyme_const, w, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = 0.5 * w[rank[i]] * exp(0.5 * x0[i]);
        check("sorted_exp dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("sorted_exp forward", n, __enzyme_fwddiff((void *)sorted_exp, enzyme_dup, x, t, enzyme_const, w, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
