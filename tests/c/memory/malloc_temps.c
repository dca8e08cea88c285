/* Temporaries from malloc and posix_memalign inside the differentiated function, filled with active data and freed before returning: reverse and forward. */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */
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

/* log(sum exp(x_i)) through a temporary array of exponentials */
static double logsumexp_tmp(const double *x, int n) {
    double *e = malloc(n * sizeof(double));
    double s = 0.0;
    for (int i = 0; i < n; i++)
        e[i] = exp(x[i]);
    for (int i = 0; i < n; i++)
        s += e[i];
    free(e);
    return log(s);
}

/* two temporaries: a_i = x_i^2, b_i = a_i + a_{i-1}; result sum b_i x_i */
static double two_temps(const double *x, int n) {
    double *a = malloc(n * sizeof(double));
    double *b = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        a[i] = x[i] * x[i];
    for (int i = 0; i < n; i++)
        b[i] = a[i] + (i > 0 ? a[i - 1] : 0.0);
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += b[i] * x[i];
    free(a);
    free(b);
    return r;
}

/* an aligned temporary holding sin(x_i), read back twice */
static double aligned_tmp(const double *x, int n) {
    void *mem = NULL;
    if (posix_memalign(&mem, 64, n * sizeof(double)) != 0)
        return 0.0;
    double *s = mem;
    for (int i = 0; i < n; i++)
        s[i] = sin(x[i]);
    double r = 0.0;
    for (int i = 0; i + 1 < n; i++)
        r += s[i] * s[i + 1];
    free(mem);
    return r;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 7; /* 8 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.4 * i - 1.3 + 0.1 * cos(i);
        t[i] = 1.0 - 0.2 * i;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) s += exp(x[i]);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)logsumexp_tmp, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("logsumexp_tmp dx = softmax", i, dx[i], exp(x[i]) / s, TOL);
        fwd += exp(x[i]) / s * t[i];
    }
    check("logsumexp_tmp forward", n, __enzyme_fwddiff((void *)logsumexp_tmp, enzyme_dup, x, t, n), fwd, TOL);

    /* r = sum x_i^3 + sum_{i>=1} x_i x_{i-1}^2 */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)two_temps, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int j = 0; j < n; j++) {
        double want = 3.0 * x[j] * x[j];
        if (j >= 1) want += x[j - 1] * x[j - 1];
        if (j + 1 < n) want += 2.0 * x[j + 1] * x[j];
        check("two_temps dx", j, dx[j], want, TOL);
        fwd += want * t[j];
    }
    check("two_temps forward", n, __enzyme_fwddiff((void *)two_temps, enzyme_dup, x, t, n), fwd, TOL);

    /* r = sum sin x_i sin x_{i+1} */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)aligned_tmp, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int j = 0; j < n; j++) {
        double nb = (j > 0 ? sin(x[j - 1]) : 0.0) + (j + 1 < n ? sin(x[j + 1]) : 0.0);
        check("aligned_tmp dx", j, dx[j], cos(x[j]) * nb, TOL);
        fwd += cos(x[j]) * nb * t[j];
    }
    check("aligned_tmp forward", n, __enzyme_fwddiff((void *)aligned_tmp, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
