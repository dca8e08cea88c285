/* Nested loops over a 2-D array accessed through pointer-to-pointer (double **, rows malloc'd separately; the shadow is an array of shadow rows): a weighted reduction, row normalization in place, a product of column sums. */
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

static double weighted_frob(double **A, int m, int n) {
    double s = 0.0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            s += (i + 1) * A[i][j] * A[i][j] / (j + 1);
    return s;
}

/* each row divided by its sum, in place */
static void row_normalize(double **A, int m, int n) {
    for (int i = 0; i < m; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += A[i][j];
        for (int j = 0; j < n; j++)
            A[i][j] /= s;
    }
}

/* prod_j sum_i A[i][j] */
static double colsum_prod(double **A, int m, int n) {
    double p = 1.0;
    for (int j = 0; j < n; j++) {
        double c = 0.0;
        for (int i = 0; i < m; i++)
            c += A[i][j];
        p *= c;
    }
    return p;
}

#define MMAX 8

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 2, n = argc + 3; /* 3 x 4 */
    double *A[MMAX], *dA[MMAX], A0[MMAX][MMAX], W[MMAX][MMAX], T[MMAX][MMAX];
    for (int i = 0; i < m; i++) {
        A[i] = malloc(n * sizeof(double));
        dA[i] = malloc(n * sizeof(double));
        for (int j = 0; j < n; j++) {
            A0[i][j] = A[i][j] = 1.0 + 0.5 * sin(1.1 * i + 0.7 * j);
            dA[i][j] = 0.0;
            W[i][j] = 0.5 + 0.25 * ((i + 2 * j) % 3);
            T[i][j] = 0.1 * (i - j);
        }
    }
    __enzyme_autodiff((void *)weighted_frob, enzyme_dup, A, dA, m, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            check("weighted_frob dA", i * n + j, dA[i][j], 2.0 * (i + 1) * A0[i][j] / (j + 1), TOL);

    /* P = prod_j c_j: dA_ij = P / c_j; forward sum_ij T_ij P / c_j */
    double c[MMAX], P = 1.0, fwd = 0.0;
    for (int j = 0; j < n; j++) {
        c[j] = 0.0;
        for (int i = 0; i < m; i++) c[j] += A0[i][j];
        P *= c[j];
    }
    for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) dA[i][j] = 0.0;
    __enzyme_autodiff((void *)colsum_prod, enzyme_dup, A, dA, m, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            check("colsum_prod dA", i * n + j, dA[i][j], P / c[j], TOL);
            dA[i][j] = T[i][j];
            fwd += T[i][j] * P / c[j];
        }
    check("colsum_prod forward", m * n, __enzyme_fwddiff((void *)colsum_prod, enzyme_dup, A, dA, m, n), fwd, TOL);

    /* row_normalize: B_ij = A_ij / s_i; seeds W give dA_ij = (W_ij - sum_k W_ik B_ik) / s_i */
    for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) dA[i][j] = W[i][j];
    __enzyme_autodiff((void *)row_normalize, enzyme_dup, A, dA, m, n);
    for (int i = 0; i < m; i++) {
        double s = 0.0, wb = 0.0;
        for (int j = 0; j < n; j++) s += A0[i][j];
        for (int j = 0; j < n; j++) wb += W[i][j] * A0[i][j] / s;
        for (int j = 0; j < n; j++) {
            check("row_normalize dA", i * n + j, dA[i][j], (W[i][j] - wb) / s, TOL);
            check("row_normalize primal", i * n + j, A[i][j], A0[i][j] / s, TOL);
        }
    }
    /* forward: tB_ij = (T_ij - B_ij sum_k T_ik) / s_i */
    for (int i = 0; i < m; i++) for (int j = 0; j < n; j++) { A[i][j] = A0[i][j]; dA[i][j] = T[i][j]; }
    __enzyme_fwddiff((void *)row_normalize, enzyme_dup, A, dA, m, n);
    for (int i = 0; i < m; i++) {
        double s = 0.0, ts = 0.0;
        for (int j = 0; j < n; j++) { s += A0[i][j]; ts += T[i][j]; }
        for (int j = 0; j < n; j++)
            check("row_normalize forward", i * n + j, dA[i][j], (T[i][j] - A0[i][j] / s * ts) / s, TOL);
    }
    for (int i = 0; i < m; i++) { free(A[i]); free(dA[i]); }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
