/* The gradient of LAPACK calls against their primal (issue 26 item 2): zymase
   differentiates dgesv_ and dsyevd_ by matrix-level rules (autodiff/rules/lapack_lu.h,
   lapack_eigen.h) that work with BLAS/LAPACK on the factors (gesv's kept after the call,
   syevd's decomposed again from the input kept at the call), so the gradient should cost
   a small multiple of the primal:
     solve:  loss = c . X, A X = B (dgesv_, n x n, n/4 right-hand sides), gradient with
             respect to A and B: a solve with A^T on the kept factors, one gemm with the
             kept solution (the factors' own adjoint is zero here);
     eigen:  loss = sum_i g_i w_i + sum G o V (dsyevd_, jobz 'V'), gradient with respect
             to A: one decomposition again and four n x n gemms;
     potrf:  loss = sum G o L (dpotrf_, lower), gradient with respect to A: the blocked
             Cholesky adjoint (Murray 2016) on the factor the call left over A, read in
             place (about 2/3 n^3 flops, twice the factorization's).

     zymase cc -O2 bench/lapack_ratio.c -o /tmp/lapack_ratio -lopenblas
     OPENBLAS_NUM_THREADS=1 /tmp/lapack_ratio 200 20
     OPENBLAS_NUM_THREADS=1 /tmp/lapack_ratio 500 5

   Primal and gradient run alternately in one process; reported: the minimum of `reps` runs
   of each, the ratio of the minima, and the median of the per-pair ratios (steadier on a
   shared machine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

void dgesv_(const int *, const int *, double *, const int *, int *, double *, const int *, int *);
void dsyevd_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *,
             const int *, int *);

static double solve(double *restrict A, double *restrict B, int n, int nrhs) {
    int info, *ipiv = malloc((size_t)n * sizeof(int));
    dgesv_(&n, &nrhs, A, &n, ipiv, B, &n, &info);
    double s = 0;
    for (long i = 0; i < (long)n * nrhs; i++)
        s += (1.0 + 1e-3 * (double)(i % 97)) * B[i];
    free(ipiv);
    return s;
}

static double eigen(double *restrict A, int n) {
    int lwork = -1, liwork = -1, iquery, info;
    double query, *w = malloc((size_t)n * sizeof(double));
    dsyevd_("V", "L", &n, A, &n, w, &query, &lwork, &iquery, &liwork, &info);
    lwork = (int)query, liwork = iquery;
    double *work = malloc((size_t)lwork * sizeof(double));
    int *iwork = malloc((size_t)liwork * sizeof(int));
    dsyevd_("V", "L", &n, A, &n, w, work, &lwork, iwork, &liwork, &info);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0 + 0.01 * i) * w[i];
    for (long i = 0; i < (long)n * n; i++)
        s += (1e-3 * (double)(i % 89)) * A[i];
    free(w), free(work), free(iwork);
    return s;
}

void dpotrf_(const char *, const int *, double *, const int *, int *);

static double cholesky(double *restrict A, int n) {
    int info;
    dpotrf_("L", &n, A, &n, &info);
    double s = 0;
    for (long j = 0; j < n; j++)
        for (long i = j; i < n; i++)
            s += (1e-3 * (double)((i + j * n) % 89)) * A[i + j * n];
    return s;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, int n, const double *tp, const double *tg, int reps) {
    double mp = 1e30, mg = 1e30, *ratio = malloc((size_t)reps * sizeof(double));
    for (int r = 0; r < reps; r++) {
        mp = tp[r] < mp ? tp[r] : mp, mg = tg[r] < mg ? tg[r] : mg;
        ratio[r] = tg[r] / tp[r];
    }
    qsort(ratio, (size_t)reps, sizeof(double), by_value);
    printf("%-6s n=%-5d primal %8.2f ms  gradient %8.2f ms  ratio of minima %.2f  median pair ratio %.2f\n", what, n,
           1e3 * mp, 1e3 * mg, mg / mp, ratio[reps / 2]);
    free(ratio);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200, reps = argc > 2 ? atoi(argv[2]) : 10, nrhs = n / 4 > 0 ? n / 4 : 1;
    long nn = (long)n * n;
    double *A0 = malloc(nn * sizeof(double)), *B0 = malloc((long)n * nrhs * sizeof(double));
    double *A = malloc(nn * sizeof(double)), *B = malloc((long)n * nrhs * sizeof(double));
    double *dA = malloc(nn * sizeof(double)), *dB = malloc((long)n * nrhs * sizeof(double));
    double *tp = malloc((size_t)reps * sizeof(double)), *tg = malloc((size_t)reps * sizeof(double));
    for (long i = 0; i < nn; i++)
        A0[i] = sin(0.37 * (double)i + 0.1) * cos(0.011 * (double)i);
    for (long j = 0; j < n; j++) /* symmetric, well conditioned */
        for (long i = 0; i < j; i++)
            A0[i + j * n] = A0[j + i * n];
    for (long i = 0; i < n; i++)
        A0[i + i * n] += 4;
    for (long i = 0; i < (long)n * nrhs; i++)
        B0[i] = cos(0.13 * (double)i);
    double sink = 0;
    for (int r = 0; r < reps; r++) {
        memcpy(A, A0, nn * sizeof(double)), memcpy(B, B0, (long)n * nrhs * sizeof(double));
        double t = seconds();
        sink += solve(A, B, n, nrhs);
        tp[r] = seconds() - t;
        memcpy(A, A0, nn * sizeof(double)), memcpy(B, B0, (long)n * nrhs * sizeof(double));
        memset(dA, 0, nn * sizeof(double)), memset(dB, 0, (long)n * nrhs * sizeof(double));
        t = seconds();
        __enzyme_autodiff((void *)solve, enzyme_dup, A, dA, enzyme_dup, B, dB, n, nrhs);
        tg[r] = seconds() - t;
        sink += dA[1];
    }
    report("gesv", n, tp, tg, reps);
    for (int r = 0; r < reps; r++) {
        memcpy(A, A0, nn * sizeof(double));
        double t = seconds();
        sink += eigen(A, n);
        tp[r] = seconds() - t;
        memcpy(A, A0, nn * sizeof(double)), memset(dA, 0, nn * sizeof(double));
        t = seconds();
        __enzyme_autodiff((void *)eigen, enzyme_dup, A, dA, n);
        tg[r] = seconds() - t;
        sink += dA[1];
    }
    report("syevd", n, tp, tg, reps);
    for (long i = 0; i < n; i++) /* diagonally dominant: positive definite */
        A0[i + i * n] += n;
    for (int r = 0; r < reps; r++) {
        memcpy(A, A0, nn * sizeof(double));
        double t = seconds();
        sink += cholesky(A, n);
        tp[r] = seconds() - t;
        memcpy(A, A0, nn * sizeof(double)), memset(dA, 0, nn * sizeof(double));
        t = seconds();
        __enzyme_autodiff((void *)cholesky, enzyme_dup, A, dA, n);
        tg[r] = seconds() - t;
        sink += dA[1];
    }
    report("potrf", n, tp, tg, reps);
    printf("(checksum %g)\n", sink);
    free(A0), free(B0), free(A), free(B), free(dA), free(dB), free(tp), free(tg);
    return 0;
}
