/* Float matrix products: C = A B and the accumulating C += A B (the output shadow keeps its seed), reverse and forward, run-time sizes. */
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

#define FTOL 1e-4

static void smatmul(const float *A, const float *B, float *C, int m, int k, int n) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0.0f;
            for (int p = 0; p < k; p++)
                s += A[i * k + p] * B[p * n + j];
            C[i * n + j] = s;
        }
}

/* C += A B: C is read as well as written */
static void sgemm_acc(const float *A, const float *B, float *C, int m, int k, int n) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            for (int p = 0; p < k; p++)
                C[i * n + j] += A[i * k + p] * B[p * n + j];
}

#define MAXE 64

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 1, k = argc + 2, n = argc + 2; /* 2 x 3 times 3 x 3 */
    float A[MAXE], B[MAXE], C[MAXE], dA[MAXE], dB[MAXE], dC[MAXE], W[MAXE], tA[MAXE], tB[MAXE], tC[MAXE];
    for (int e = 0; e < m * k; e++) { A[e] = 0.25f * (float)e - 0.5f; tA[e] = 0.5f; }
    for (int e = 0; e < k * n; e++) { B[e] = 1.0f - 0.125f * (float)e; tB[e] = (e % 2) ? -0.25f : 0.75f; }
    for (int e = 0; e < m * n; e++) W[e] = 1.0f + 0.5f * (float)(e % 3);

    for (int mode = 0; mode < 2; mode++) {
        for (int e = 0; e < m * k; e++) dA[e] = 0.0f;
        for (int e = 0; e < k * n; e++) dB[e] = 0.0f;
        for (int e = 0; e < m * n; e++) { dC[e] = W[e]; C[e] = 0.5f; }
        if (mode == 0)
            __enzyme_autodiff((void *)smatmul, enzyme_dup, A, dA, enzyme_dup, B, dB, enzyme_dup, C, dC, m, k, n);
        else
            __enzyme_autodiff((void *)sgemm_acc, enzyme_dup, A, dA, enzyme_dup, B, dB, enzyme_dup, C, dC, m, k, n);
        for (int i = 0; i < m; i++)
            for (int p = 0; p < k; p++) {
                double want = 0.0;
                for (int j = 0; j < n; j++) want += (double)W[i * n + j] * B[p * n + j];
                check(mode ? "sgemm_acc dA" : "smatmul dA", i * k + p, dA[i * k + p], want, FTOL);
            }
        for (int p = 0; p < k; p++)
            for (int j = 0; j < n; j++) {
                double want = 0.0;
                for (int i = 0; i < m; i++) want += (double)A[i * k + p] * W[i * n + j];
                check(mode ? "sgemm_acc dB" : "smatmul dB", p * n + j, dB[p * n + j], want, FTOL);
            }
        /* C = A B overwrites C: its shadow is consumed; C += A B keeps d(C_out)/d(C_in) = 1 */
        for (int e = 0; e < m * n; e++)
            check(mode ? "sgemm_acc dC keeps its seed" : "smatmul dC zeroed", e, dC[e], mode ? W[e] : 0.0, FTOL);
    }

    /* forward: C = A B gives tA B + A tB; C += A B also carries the tangent of C */
    for (int e = 0; e < m * n; e++) { dC[e] = 0.0f; C[e] = 0.0f; tC[e] = 0.25f * (float)e; }
    __enzyme_fwddiff((void *)smatmul, enzyme_dup, A, tA, enzyme_dup, B, tB, enzyme_dup, C, dC, m, k, n);
    __enzyme_fwddiff((void *)sgemm_acc, enzyme_dup, A, tA, enzyme_const, B, enzyme_dup, C, tC, m, k, n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double want = 0.0, want_acc = 0.25 * (i * n + j);
            for (int p = 0; p < k; p++) {
                want += (double)tA[i * k + p] * B[p * n + j] + (double)A[i * k + p] * tB[p * n + j];
                want_acc += (double)tA[i * k + p] * B[p * n + j];
            }
            check("smatmul forward dC", i * n + j, dC[i * n + j], want, FTOL);
            check("sgemm_acc forward tC", i * n + j, tC[i * n + j], want_acc, FTOL);
        }

    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
