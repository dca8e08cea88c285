/* Row-major matrix-vector products y = A x (an *out parameter) and x^T A x, sizes known at run time: reverse with a seeded output shadow, A dup or const, forward mode. */
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

static void matvec(const double *A, const double *x, double *y, int m, int n) {
    for (int i = 0; i < m; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += A[i * n + j] * x[j];
        y[i] = s;
    }
}

static double quad(const double *A, const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            s += x[i] * A[i * n + j] * x[j];
    return s;
}

#define MAXN 16

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 2, n = argc + 3; /* 3 x 4 */
    double A[MAXN * MAXN], dA[MAXN * MAXN], tA[MAXN * MAXN], x[MAXN], dx[MAXN], tx[MAXN];
    double y[MAXN], dy[MAXN], w[MAXN];
    for (int k = 0; k < n * n; k++) {
        A[k] = sin(0.9 * k + 0.3);
        tA[k] = 0.1 * ((k * 7) % 5) - 0.2;
    }
    for (int j = 0; j < n; j++) { x[j] = 1.0 - 0.4 * j; tx[j] = 0.3 + 0.1 * j; }
    for (int i = 0; i < m; i++) w[i] = 1.0 + 0.5 * i;

    /* reverse: seed dy = w; then dA += w x^T, dx += A^T w, and the output shadow is consumed (zeroed) */
    for (int k = 0; k < m * n; k++) dA[k] = 0.0;
    for (int j = 0; j < n; j++) dx[j] = 0.0;
    for (int i = 0; i < m; i++) { dy[i] = w[i]; y[i] = 0.0; }
    __enzyme_autodiff((void *)matvec, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, m, n);
    for (int i = 0; i < m; i++) {
        double yi = 0.0;
        for (int j = 0; j < n; j++) {
            yi += A[i * n + j] * x[j];
            check("matvec dA = w x^T", i * n + j, dA[i * n + j], w[i] * x[j], TOL);
        }
        check("matvec primal y", i, y[i], yi, TOL);
        check("matvec dy zeroed", i, dy[i], 0.0, TOL);
    }
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += A[i * n + j] * w[i];
        check("matvec dx = A^T w", j, dx[j], want, TOL);
    }

    /* reverse with the matrix constant */
    for (int j = 0; j < n; j++) dx[j] = 0.0;
    for (int i = 0; i < m; i++) dy[i] = w[i];
    __enzyme_autodiff((void *)matvec, enzyme_const, A, enzyme_dup, x, dx, enzyme_dup, y, dy, m, n);
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += A[i * n + j] * w[i];
        check("matvec dx (A const)", j, dx[j], want, TOL);
    }

    /* forward: dy = tA x + A tx */
    for (int i = 0; i < m; i++) dy[i] = 0.0;
    __enzyme_fwddiff((void *)matvec, enzyme_dup, A, tA, enzyme_dup, x, tx, enzyme_dup, y, dy, m, n);
    for (int i = 0; i < m; i++) {
        double want = 0.0;
        for (int j = 0; j < n; j++) want += tA[i * n + j] * x[j] + A[i * n + j] * tx[j];
        check("matvec forward dy", i, dy[i], want, TOL);
    }

    /* x^T A x: dx = (A + A^T) x, dA = x x^T */
    for (int k = 0; k < n * n; k++) dA[k] = 0.0;
    for (int j = 0; j < n; j++) dx[j] = 0.0;
    __enzyme_autodiff((void *)quad, enzyme_dup, A, dA, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = 0.0;
        for (int j = 0; j < n; j++) {
            want += (A[i * n + j] + A[j * n + i]) * x[j];
            check("quad dA = x x^T", i * n + j, dA[i * n + j], x[i] * x[j], TOL);
            fwd += x[i] * tA[i * n + j] * x[j];
        }
        check("quad dx = (A + A^T) x", i, dx[i], want, TOL);
        fwd += want * tx[i];
    }
    check("quad forward", n, __enzyme_fwddiff((void *)quad, enzyme_dup, A, tA, enzyme_dup, x, tx, n), fwd, TOL);

    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
