/* calloc'd accumulators and a buffer grown with realloc while it holds active data, all freed inside the function: reverse and forward. */
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

/* buf_i = (i + 1) x_i + buf_{i-1} / 2, grown by doubling with realloc; result sum buf_i^2 */
static double grow(const double *x, int n) {
    double *buf = NULL;
    int cap = 0;
    for (int i = 0; i < n; i++) {
        if (i >= cap) {
            cap = cap ? 2 * cap : 2;
            buf = realloc(buf, cap * sizeof(double));
        }
        buf[i] = (i + 1) * x[i] + (i > 0 ? 0.5 * buf[i - 1] : 0.0);
    }
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += buf[i] * buf[i];
    free(buf);
    return r;
}

/* bins from calloc: h[i % nb] += x_i^2; result sum_b (b + 1) h_b^2 */
static double bins(const double *x, int n, int nb) {
    double *h = calloc(nb, sizeof(double));
    for (int i = 0; i < n; i++)
        h[i % nb] += x[i] * x[i];
    double r = 0.0;
    for (int b = 0; b < nb; b++)
        r += (b + 1) * h[b] * h[b];
    free(h);
    return r;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10, nb = argc + 2; /* 11 values, 3 bins */
    double x[NMAX], dx[NMAX], t[NMAX], buf[NMAX], h[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.7 * cos(1.7 * i) + 0.1;
        t[i] = 0.2 * (i % 5) - 0.3;
    }
    for (int i = 0; i < n; i++) buf[i] = (i + 1) * x[i] + (i > 0 ? 0.5 * buf[i - 1] : 0.0);
    for (int b = 0; b < nb; b++) h[b] = 0.0;
    for (int i = 0; i < n; i++) h[i % nb] += x[i] * x[i];

    /* d/dx_k = (k + 1) sum_{i >= k} 2 buf_i 2^-(i-k) */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)grow, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int k = 0; k < n; k++) {
        double want = 0.0;
        for (int i = k; i < n; i++) want += 2.0 * buf[i] * pow(0.5, i - k);
        want *= k + 1;
        check("grow (realloc) dx", k, dx[k], want, TOL);
        fwd += want * t[k];
    }
    check("grow (realloc) forward", n, __enzyme_fwddiff((void *)grow, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)bins, enzyme_dup, x, dx, n, nb);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        int b = i % nb;
        double want = 2.0 * (b + 1) * h[b] * 2.0 * x[i];
        check("bins (calloc) dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("bins (calloc) forward", n, __enzyme_fwddiff((void *)bins, enzyme_dup, x, t, n, nb), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
