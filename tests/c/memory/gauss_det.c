/* Determinant by Gaussian elimination with partial pivoting on a malloc'd copy (row swaps in memory, data-dependent pivots): gradient det(A) A^-T (Jacobi's formula), forward det(A) tr(A^-1 T). */
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

static double det_pivot(const double *A, int n) {
    double *a = malloc(n * n * sizeof(double));
    memcpy(a, A, n * n * sizeof(double));
    double det = 1.0;
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(a[i * n + k]) > fabs(a[p * n + k]))
                p = i;
        if (p != k) {
            for (int j = 0; j < n; j++) {
                double t = a[k * n + j];
                a[k * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            det = -det;
        }
        det *= a[k * n + k];
        for (int i = k + 1; i < n; i++) {
            double f = a[i * n + k] / a[k * n + k];
            for (int j = k; j < n; j++)
                a[i * n + j] -= f * a[k * n + j];
        }
    }
    free(a);
    return det;
}

#define NMAX 8

/* Gauss-Jordan inverse with partial pivoting, for the closed form only */
static void inverse(const double *A, double *inv, int n) {
    double a[NMAX][2 * NMAX];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2 * n; j++)
            a[i][j] = j < n ? A[i * n + j] : (j - n == i);
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++) if (fabs(a[i][k]) > fabs(a[p][k])) p = i;
        for (int j = 0; j < 2 * n; j++) { double t = a[k][j]; a[k][j] = a[p][j]; a[p][j] = t; }
        double d = a[k][k];
        for (int j = 0; j < 2 * n; j++) a[k][j] /= d;
        for (int i = 0; i < n; i++) {
            if (i == k) continue;
            double f = a[i][k];
            for (int j = 0; j < 2 * n; j++) a[i][j] -= f * a[k][j];
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) inv[i * n + j] = a[i][n + j];
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3; /* 4 */
    double A[NMAX * NMAX], dA[NMAX * NMAX], T[NMAX * NMAX], inv[NMAX * NMAX];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            A[i * n + j] = sin(1.7 * i + 0.9 * j + 0.3) + (i == (j + 1) % n ? 1.5 : 0.0); /* pivots off the diagonal */
            T[i * n + j] = 0.1 * ((i * 3 + j) % 5) - 0.2;
            dA[i * n + j] = 0.0;
        }
    inverse(A, inv, n);
    double det = det_pivot(A, n);
    __enzyme_autodiff((void *)det_pivot, enzyme_dup, A, dA, n);
    double tr = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            check("det_pivot dA = det A^-T", i * n + j, dA[i * n + j], det * inv[j * n + i], TOL);
            tr += inv[j * n + i] * T[i * n + j];
        }
    check("det_pivot forward", n, __enzyme_fwddiff((void *)det_pivot, enzyme_dup, A, T, n), det * tr, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
