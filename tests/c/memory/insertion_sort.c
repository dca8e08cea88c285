/* Insertion sort of a malloc'd copy followed by weighted reductions (data-dependent control flow, values moved through memory): the gradient follows each element to its sorted position. */
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

static void insertion_sort(double *a, int n) {
    for (int i = 1; i < n; i++) {
        double v = a[i];
        int j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* sum_k w_k s_k^2 with s = sort(x) */
static double sorted_weighted(const double *x, const double *w, int n) {
    double *s = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) s[i] = x[i];
    insertion_sort(s, n);
    double r = 0.0;
    for (int k = 0; k < n; k++)
        r += w[k] * s[k] * s[k];
    free(s);
    return r;
}

/* the mean without the smallest and the largest value */
static double trimmed_mean(const double *x, int n) {
    double *s = malloc(n * sizeof(double));
    memcpy(s, x, n * sizeof(double));
    insertion_sort(s, n);
    double r = 0.0;
    for (int k = 1; k < n - 1; k++)
        r += s[k];
    free(s);
    return r / (n - 2);
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10; /* 11 */
    double x[NMAX], w[NMAX], dx[NMAX], dw[NMAX], t[NMAX], tw[NMAX];
    int rank[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 4.0 * fmod(0.6180339887 * (i + 1), 1.0) - 2.0; /* distinct, well separated */
        w[i] = 0.5 + 0.25 * i;
        t[i] = cos(2.0 * i);
        tw[i] = 0.1 * i;
    }
    for (int i = 0; i < n; i++) {
        rank[i] = 0;
        for (int j = 0; j < n; j++) rank[i] += x[j] < x[i];
    }

    for (int i = 0; i < n; i++) dx[i] = dw[i] = 0.0;
    __enzyme_autodiff((void *)sorted_weighted, enzyme_dup, x, dx, enzyme_dup, w, dw, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("sorted_weighted dx", i, dx[i], 2.0 * w[rank[i]] * x[i], TOL);
        check("sorted_weighted dw", rank[i], dw[rank[i]], x[i] * x[i], TOL);
        check("input not sorted in place", i, x[i], 4.0 * fmod(0.6180339887 * (i + 1), 1.0) - 2.0, TOL);
        fwd += 2.0 * w[rank[i]] * x[i] * t[i] + tw[rank[i]] * x[i] * x[i];
    }
    check("sorted_weighted forward", n, __enzyme_fwddiff((void *)sorted_weighted, enzyme_dup, x, t, enzyme_dup, w, tw, n), fwd, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)sorted_weighted, enzyme_dup, x, dx, enzyme_const, w, n);
    for (int i = 0; i < n; i++)
        check("sorted_weighted dx (w const)", i, dx[i], 2.0 * w[rank[i]] * x[i], TOL);

    /* trimmed mean: 1/(n-2) except for the minimum and the maximum */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)trimmed_mean, enzyme_dup, x, dx, n);
    double tfwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = (rank[i] == 0 || rank[i] == n - 1) ? 0.0 : 1.0 / (n - 2);
        check("trimmed_mean dx", i, dx[i], want, TOL);
        tfwd += want * t[i];
    }
    check("trimmed_mean forward", n, __enzyme_fwddiff((void *)trimmed_mean, enzyme_dup, x, t, n), tfwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
