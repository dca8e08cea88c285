/* Pointer arithmetic: *p++ reductions, *y++ += a * *x++ (an accumulating output keeps its seed), a strided walk, a reversed copy through *--p; reverse and forward. */
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

static double sumsq_ptr(const double *p, int n) {
    double s = 0.0;
    while (n-- > 0) {
        s += *p * *p;
        p++;
    }
    return s;
}

/* y += 2.5 x */
static void axpy_ptr(const double *x, double *y, int n) {
    const double *end = x + n;
    while (x < end)
        *y++ += 2.5 * *x++;
}

/* sum of products of the pairs (p[k], p[k + 1]) at k = 0, stride, 2 stride, ... */
static double strided_pairs(const double *p, int n, int stride) {
    double s = 0.0;
    for (const double *q = p; q + 1 < p + n; q += stride)
        s += q[0] * q[1];
    return s;
}

/* y_i = sin(x_{n-1-i}) */
static void reverse_sin(const double *x, double *y, int n) {
    const double *p = x + n;
    while (p != x) {
        --p;
        *y++ = sin(*p);
    }
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10, stride = argc + 2; /* 11, stride 3 */
    double x[NMAX], dx[NMAX], y[NMAX], dy[NMAX], t[NMAX], ty[NMAX], w[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 1.2 * sin(0.6 * i + 0.1);
        t[i] = 0.1 * i - 0.5;
        w[i] = 1.0 + 0.1 * i;
        ty[i] = 0.5;
    }
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)sumsq_ptr, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) { check("sumsq_ptr dx", i, dx[i], 2.0 * x[i], TOL); fwd += 2.0 * x[i] * t[i]; }
    check("sumsq_ptr forward", n, __enzyme_fwddiff((void *)sumsq_ptr, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) { dx[i] = 0.0; y[i] = 1.0; dy[i] = w[i]; }
    __enzyme_autodiff((void *)axpy_ptr, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("axpy_ptr dx = 2.5 w", i, dx[i], 2.5 * w[i], TOL);
        check("axpy_ptr dy keeps its seed", i, dy[i], w[i], TOL);
        check("axpy_ptr primal", i, y[i], 1.0 + 2.5 * x[i], TOL);
    }
    __enzyme_fwddiff((void *)axpy_ptr, enzyme_dup, x, t, enzyme_dup, y, ty, n);
    for (int i = 0; i < n; i++)
        check("axpy_ptr forward", i, ty[i], 0.5 + 2.5 * t[i], TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)strided_pairs, enzyme_dup, x, dx, n, stride);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = 0.0;
        if (i % stride == 0 && i + 1 < n) want += x[i + 1];
        if (i >= 1 && (i - 1) % stride == 0) want += x[i - 1];
        check("strided_pairs dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("strided_pairs forward", n, __enzyme_fwddiff((void *)strided_pairs, enzyme_dup, x, t, n, stride), fwd, TOL);

    for (int i = 0; i < n; i++) { dx[i] = 0.0; dy[i] = w[i]; }
    __enzyme_autodiff((void *)reverse_sin, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("reverse_sin dx", i, dx[i], w[n - 1 - i] * cos(x[i]), TOL);
        check("reverse_sin dy zeroed", i, dy[i], 0.0, TOL);
    }
    __enzyme_fwddiff((void *)reverse_sin, enzyme_dup, x, t, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++)
        check("reverse_sin forward", i, dy[i], cos(x[n - 1 - i]) * t[n - 1 - i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
