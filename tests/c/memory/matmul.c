/* Row-major matrix-matrix product C = A B (m x k times k x n, run-time sizes): reverse with a seeded dC (checked zeroed), enzyme_dupnoneed on C, forward mode. */
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

static void matmul(const double *A, const double *B, double *C, int m, int k, int n) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int p = 0; p < k; p++)
                s += A[i * k + p] * B[p * n + j];
            C[i * n + j] = s;
        }
}

#define MAXE 64

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 2, k = argc + 3, n = argc + 4; /* 3 x 4 times 4 x 5 */
    double A[MAXE], B[MAXE], C[MAXE], dA[MAXE], dB[MAXE], dC[MAXE], W[MAXE], tA[MAXE], tB[MAXE];
    for (int e = 0; e < m * k; e++) { A[e] = cos(0.7 * e) + 0.1; tA[e] = 0.05 * (e % 7) - 0.1; }
    for (int e = 0; e < k * n; e++) { B[e] = 0.3 * e - 2.0 + sin(e); tB[e] = (e % 3) - 1.0; }
    for (int e = 0; e < m * n; e++) W[e] = 0.5 + 0.25 * (e % 5);

    for (int pass = 0; pass < 2; pass++) {
        for (int e = 0; e < m * k; e++) dA[e] = 0.0;
        for (int e = 0; e < k * n; e++) dB[e] = 0.0;
        for (int e = 0; e < m * n; e++) { dC[e] = W[e]; C[e] = 0.0; }
        if (pass == 0)
            __enzyme_autodiff((void *)matmul, enzyme_dup, A, dA, enzyme_dup, B, dB, enzyme_dup, C, dC, m, k, n);
        else /* the primal C is not needed: only the shadows are checked */
            __enzyme_autodiff((void *)matmul, enzyme_dup, A, dA, enzyme_dup, B, dB, enzyme_dupnoneed, C, dC, m, k, n);
        /* dA = W B^T, dB = A^T W */
        for (int i = 0; i < m; i++)
            for (int p = 0; p < k; p++) {
                double want = 0.0;
                for (int j = 0; j < n; j++) want += W[i * n + j] * B[p * n + j];
                check(pass ? "matmul dA = W B^T (dupnoneed C)" : "matmul dA = W B^T", i * k + p, dA[i * k + p], want, TOL);
            }
        for (int p = 0; p < k; p++)
            for (int j = 0; j < n; j++) {
                double want = 0.0;
                for (int i = 0; i < m; i++) want += A[i * k + p] * W[i * n + j];
                check(pass ? "matmul dB = A^T W (dupnoneed C)" : "matmul dB = A^T W", p * n + j, dB[p * n + j], want, TOL);
            }
        for (int e = 0; e < m * n; e++)
            check(pass ? "matmul dC zeroed (dupnoneed C)" : "matmul dC zeroed", e, dC[e], 0.0, TOL);
        if (pass == 0)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double want = 0.0;
                    for (int p = 0; p < k; p++) want += A[i * k + p] * B[p * n + j];
                    check("matmul primal C", i * n + j, C[i * n + j], want, TOL);
                }
    }

    /* B constant: only dA */
    for (int e = 0; e < m * k; e++) dA[e] = 0.0;
    for (int e = 0; e < m * n; e++) dC[e] = W[e];
    __enzyme_autodiff((void *)matmul, enzyme_dup, A, dA, enzyme_const, B, enzyme_dup, C, dC, m, k, n);
    for (int i = 0; i < m; i++)
        for (int p = 0; p < k; p++) {
            double want = 0.0;
            for (int j = 0; j < n; j++) want += W[i * n + j] * B[p * n + j];
            check("matmul dA (B const)", i * k + p, dA[i * k + p], want, TOL);
        }

    /* forward: dC = tA B + A tB */
    for (int e = 0; e < m * n; e++) dC[e] = 0.0;
    __enzyme_fwddiff((void *)matmul, enzyme_dup, A, tA, enzyme_dup, B, tB, enzyme_dup, C, dC, m, k, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double want = 0.0;
            for (int p = 0; p < k; p++) want += tA[i * k + p] * B[p * n + j] + A[i * k + p] * tB[p * n + j];
            check("matmul forward dC", i * n + j, dC[i * n + j], want, TOL);
        }

    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
