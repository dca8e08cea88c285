/* Pointer-valued results: a function that updates an array in place and returns a
 * pointer into it. Forward mode returns the shadow of the returned pointer (Enzyme's
 * convention for __enzyme_fwddiff on a pointer result); reverse mode ignores the
 * returned pointer and accumulates into the shadows. */
#include <math.h>
#include <stdio.h>

extern double *__enzyme_fwddiff(void *, ...);
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

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

/* x[i] <- sin(x[i]) * x[i] for all i; returns a pointer to the largest-index element */
static double *update_last(double *x, int n) {
    for (int i = 0; i < n; i++) x[i] = sin(x[i]) * x[i];
    return x + (n - 1);
}

static double sum_after(double *x, int n) {
    double *last = update_last(x, n);
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s + *last;
}

int main(void) {
    enum { N = 5 };
    double x0[N] = {0.3, -0.7, 1.1, 0.5, 2.0};

    /* forward: the returned shadow points at the tangent of x[n-1] */
    double x[N], dx[N];
    for (int i = 0; i < N; i++) { x[i] = x0[i]; dx[i] = 0.1 * (i + 1); }
    double *dlast = __enzyme_fwddiff((void *)update_last, enzyme_dup, x, dx, enzyme_const, N);
    check("returned shadow is dx + n - 1", N - 1, (double)(dlast - dx), N - 1, 0);
    for (int i = 0; i < N; i++) {
        double a = x0[i], want = (cos(a) * a + sin(a)) * 0.1 * (i + 1);
        check("update_last forward tangent", i, dx[i], want, TOL);
    }
    check("returned shadow value", N - 1, *dlast, dx[N - 1], TOL);

    /* reverse through a caller that dereferences the returned pointer */
    double y[N], dy[N] = {0};
    for (int i = 0; i < N; i++) y[i] = x0[i];
    __enzyme_autodiff((void *)sum_after, enzyme_dup, y, dy, enzyme_const, N);
    for (int i = 0; i < N; i++) {
        double a = x0[i], d = cos(a) * a + sin(a);
        check("sum_after gradient", i, dy[i], (i == N - 1 ? 2.0 : 1.0) * d, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
