/* What the reverse sweep of a BLAS call keeps (issue 26 items 1 and 4): an input that
   nothing overwrites after the call is read again, no copy; an input overwritten later
   (a vector copied over after the call, the vector of a power iteration that each step
   replaces, gemm's C read through beta before the call writes it) is copied at the call.
   LAPACK's getrf/getrs likewise (their factors and pivots). potrf's reverse reads the
   factor the call left over A (issue 26, the remaining item 1): in place when nothing
   overwrites A after the call, copied right after the call when something does; never
   the input (no factorization again).
   In split mode (__enzyme_augmentfwd / __enzyme_reverse) the caller may overwrite an input
   between the two calls, so it is always copied.
   Type analysis knows what a BLAS call writes (item 4): a scratch vector that only gemv
   writes, copied out by memcpy, is known to hold doubles.
   Built with ZYMASE_TAPE_STATS=1, which makes the derivatives count the bytes they keep in
   __zymase_tape_bytes (tests/test_c_blas.py); the gradients are checked against central
   finite differences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);
extern int enzyme_const, enzyme_dup;
extern long __zymase_tape_bytes;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-44s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define N 6
#define STEPS 4

static double wsum(const double *y, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (0.5 + 0.25 * i) * y[i];
    return s;
}

/* y = W (A x): h = A x is read by the second gemv and never overwritten: no copies */
static double two_layers(const double *restrict A, const double *restrict W, const double *restrict x,
                         double *restrict y, int n) {
    double *h = malloc(n * sizeof(double));
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, A, n, x, 1, 0.0, h, 1);
    cblas_dgemv(CblasRowMajor, CblasTrans, n, n, 1.0, W, n, h, 1, 0.0, y, 1);
    double s = wsum(y, n);
    free(h);
    return s;
}

/* the same, then y copied over x: x (needed for dA) is copied at the first call */
static double two_layers_then_overwrite(const double *restrict A, const double *restrict W, double *restrict x,
                                        double *restrict y, int n) {
    double *h = malloc(n * sizeof(double));
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, A, n, x, 1, 0.0, h, 1);
    cblas_dgemv(CblasRowMajor, CblasTrans, n, n, 1.0, W, n, h, 1, 0.0, y, 1);
    cblas_dcopy(n, y, 1, x, 1);
    double s = wsum(x, n);
    free(h);
    return s;
}

/* x <- 0.5 A x, steps times: each step's x is overwritten by the next */
static double power(const double *restrict A, double *restrict x, double *restrict y, int n, int steps) {
    for (int t = 0; t < steps; t++) {
        cblas_dgemv(CblasColMajor, CblasNoTrans, n, n, 0.5, A, n, x, 1, 0.0, y, 1);
        cblas_dcopy(n, y, 1, x, 1);
    }
    return wsum(x, n);
}

/* C = A B + beta C with beta active: dbeta needs C as it was, which the call overwrites */
static double gemm_beta(const double *restrict A, const double *restrict B, double *restrict C, double beta, int n) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, beta, C, n);
    return wsum(C, n * n);
}

/* y = A x through a scratch buffer copied out with memcpy: nothing but gemv says the
   scratch holds doubles (without that, the memcpy's derivative is refused) */
static void through_scratch(const double *A, const double *x, double *y, int n) {
    double *t = malloc(n * sizeof(double));
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, A, n, x, 1, 0.0, t, 1);
    memcpy(y, t, n * sizeof(double));
    free(t);
}

/* y = A x, differentiated in split mode */
void layer(const double *A, const double *x, double *y, int n) {
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, A, n, x, 1, 0.0, y, 1);
}

/* LAPACK (issue 26 item 2): getrf overwrites A and getrs B, so both are copied at their
   call; getrs's factors and pivots are read again when nothing overwrites them after it
   and copied when something does */
void dgetrf_(const int *, const int *, double *, const int *, int *, int *);
void dgetrs_(const char *, const int *, const int *, const double *, const int *, const int *, double *, const int *,
             int *);
static double lu_solve(double *restrict A, double *restrict x, int n) {
    int ipiv[N], info, one = 1;
    dgetrf_(&n, &n, A, &n, ipiv, &info);
    dgetrs_("N", &n, &one, A, &n, ipiv, x, &n, &info);
    return wsum(x, n);
}
static double lu_solve_then_overwrite(double *restrict A, double *restrict x, int *restrict ipiv, int n) {
    int info, one = 1;
    dgetrf_(&n, &n, A, &n, ipiv, &info);
    dgetrs_("N", &n, &one, A, &n, ipiv, x, &n, &info);
    memset(A, 0, (size_t)n * n * sizeof(double)), memset(ipiv, 0, (size_t)n * sizeof(int));
    return wsum(x, n);
}

/* potrf: the loss reads the factor (and the untouched upper triangle; N * N elements, a
   constant, so that wsum's trip count is not kept) */
void dpotrf_(const char *, const int *, double *, const int *, int *);
static double cholesky(double *restrict A, int n) {
    int info;
    dpotrf_("L", &n, A, &n, &info);
    return wsum(A, N * N);
}
static double cholesky_then_overwrite(double *restrict A, int n) {
    int info;
    dpotrf_("L", &n, A, &n, &info);
    double s = wsum(A, N * N);
    memset(A, 0, (size_t)n * n * sizeof(double));
    return s;
}

static double A0[N * N], W0[N * N], x0_[N], vA[N * N], vW[N * N], vx[N];
static double A[N * N], W[N * N], x[N], y[N], C[N * N], dA[N * N], dW[N * N], dx[N], dy[N], dC[N * N];

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(W, W0, sizeof W), memcpy(x, x0_, sizeof x);
    memset(y, 0, sizeof y), memset(dA, 0, sizeof dA), memset(dW, 0, sizeof dW), memset(dx, 0, sizeof dx);
    memset(dy, 0, sizeof dy), memset(dC, 0, sizeof dC);
    for (int i = 0; i < N * N; i++)
        C[i] = 0.1 * i - 1;
}

static double projected(void) {
    double s = 0;
    for (int i = 0; i < N * N; i++)
        s += dA[i] * vA[i] + dW[i] * vW[i];
    for (int i = 0; i < N; i++)
        s += dx[i] * vx[i];
    return s;
}

/* the loss at the inputs moved by t along (vA, vW, vx) */
static double at(int which, double t, int n) {
    reset();
    for (int i = 0; i < N * N; i++)
        A[i] += t * vA[i], W[i] += t * vW[i];
    for (int i = 0; i < N; i++)
        x[i] += t * vx[i];
    if (which == 0)
        return two_layers(A, W, x, y, n);
    if (which == 1)
        return two_layers_then_overwrite(A, W, x, y, n);
    return power(A, x, y, n, STEPS);
}

static double fd(int which, int n) {
    double h = 1e-5;
    return (at(which, h, n) - at(which, -h, n)) / (2 * h);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* N */
    for (int i = 0; i < N * N; i++)
        A0[i] = sin(0.7 * i + 0.2), W0[i] = cos(0.3 * i - 0.1), vA[i] = 0.3 * sin(1.3 * i), vW[i] = 0.2 * cos(i);
    for (int i = 0; i < N; i++)
        x0_[i] = 1.0 - 0.2 * i, vx[i] = 0.1 * (i % 3) - 0.1;

    reset();
    long before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)two_layers, enzyme_dup, A, dA, enzyme_dup, W, dW, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    long kept = __zymase_tape_bytes - before;
    check("two gemv: gradient", n, projected(), fd(0, n), 1e-6);
    check("two gemv, nothing overwritten: bytes kept", n, (double)kept, 0, 0);

    reset();
    before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)two_layers_then_overwrite, enzyme_dup, A, dA, enzyme_dup, W, dW, enzyme_dup, x, dx,
                      enzyme_dup, y, dy, n);
    kept = __zymase_tape_bytes - before;
    check("two gemv, x overwritten: gradient", n, projected(), fd(1, n), 1e-6);
    check("two gemv, x overwritten: bytes kept (x)", n, (double)kept, (double)(n * sizeof(double)), 0);

    reset();
    before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)power, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, n, STEPS);
    kept = __zymase_tape_bytes - before;
    check("power iteration: gradient", n, projected(), fd(2, n), 1e-6);
    check("power iteration: at least x per step kept", n, kept >= (long)(STEPS * n * sizeof(double)), 1, 0);

    reset();
    double beta = 0.7, dbeta;
    before = __zymase_tape_bytes;
    dbeta = __enzyme_autodiff((void *)gemm_beta, enzyme_const, A, enzyme_const, W, enzyme_dup, C, dC, beta, n);
    kept = __zymase_tape_bytes - before;
    double want = 0;
    for (int i = 0; i < n * n; i++)
        want += (0.5 + 0.25 * i) * (0.1 * i - 1);
    check("gemm dbeta = W . C_old", n, dbeta, want, 1e-9);
    check("gemm dC_old = beta W", n, dC[n + 1], beta * (0.5 + 0.25 * (n + 1)), 1e-12);
    /* the same with beta constant: C_old is not needed (the rest of what is kept, the
       count of wsum's loop, is the same in both) */
    reset();
    before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)gemm_beta, enzyme_const, A, enzyme_const, W, enzyme_dup, C, dC, enzyme_const, beta, n);
    long kept_const = __zymase_tape_bytes - before;
    check("gemm dC_old = beta W, beta constant", n, dC[n + 1], beta * (0.5 + 0.25 * (n + 1)), 1e-12);
    check("gemm, active beta: extra bytes kept (C)", n, (double)(kept - kept_const), (double)(n * n * sizeof(double)),
          0);

    /* getrf + getrs: A and x copied (the calls overwrite them), the factors and pivots
       only when overwritten after the solve */
    reset();
    for (int i = 0; i < n; i++) /* A0 has rank 2 */
        A[i * (n + 1)] += 3;
    before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)lu_solve, enzyme_dup, A, dA, enzyme_dup, x, dx, n);
    kept = __zymase_tape_bytes - before;
    double dA_kept[N * N];
    memcpy(dA_kept, dA, sizeof dA);
    check("getrf, getrs: bytes kept (A, x)", n, (double)kept, (double)((n * n + n) * sizeof(double)), 0);
    reset();
    for (int i = 0; i < n; i++)
        A[i * (n + 1)] += 3;
    before = __zymase_tape_bytes;
    int pivots[N];
    __enzyme_autodiff((void *)lu_solve_then_overwrite, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_const, pivots, n);
    kept = __zymase_tape_bytes - before;
    check("getrf, getrs, factors overwritten: bytes kept", n, (double)kept,
          (double)((2 * n * n + n) * sizeof(double) + n * sizeof(int)), 0);
    check("getrf, getrs, factors overwritten: same dA", n, dA[n + 2], dA_kept[n + 2], 1e-12);

    /* potrf: the factor read in place (no bytes), or copied after the call when A is
       overwritten later (n * n doubles); the same gradient, against a central difference */
    double S[N * N], dS[N * N], vS[N * N];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = i == j ? n : 0;
            for (int k = 0; k < n; k++)
                s += A0[i * n + k] * A0[j * n + k];
            S[i + j * n] = s, vS[i + j * n] = vA[i + j * n];
        }
    double fd_potrf = 0, h = 1e-5;
    for (int side = -1; side <= 1; side += 2) {
        for (int i = 0; i < n * n; i++)
            A[i] = S[i] + side * h * vS[i];
        fd_potrf += side * cholesky(A, n) / (2 * h);
    }
    for (int round = 0; round < 2; round++) {
        memcpy(A, S, sizeof A), memset(dS, 0, sizeof dS);
        before = __zymase_tape_bytes;
        if (round)
            __enzyme_autodiff((void *)cholesky_then_overwrite, enzyme_dup, A, dS, n);
        else
            __enzyme_autodiff((void *)cholesky, enzyme_dup, A, dS, n);
        kept = __zymase_tape_bytes - before;
        double got = 0;
        for (int i = 0; i < n * n; i++)
            got += dS[i] * vS[i];
        check(round ? "potrf, A overwritten: gradient" : "potrf: gradient", n, got, fd_potrf, 1e-6);
        check(round ? "potrf, A overwritten: bytes kept (the factor)" : "potrf: bytes kept", n, (double)kept,
              round ? (double)(n * n * sizeof(double)) : 0, 0);
    }

    /* split mode: x overwritten between the forward and the reverse call */
    reset();
    void *tape = __enzyme_augmentfwd((void *)layer, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++)
        x[i] = 1e3 + i, dy[i] = 1.0 + i;
    __enzyme_reverse((void *)layer, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, n, tape);
    for (int i = 0; i < n; i++)
        check("split gemv, x overwritten: dA = dy x_old^T", i, dA[i * n + 1], (1.0 + i) * x0_[1], 1e-12);

    reset();
    for (int i = 0; i < n; i++)
        dy[i] = 1.0 + i;
    __enzyme_autodiff((void *)through_scratch, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int j = 0; j < n; j++) {
        double want_dx = 0;
        for (int i = 0; i < n; i++)
            want_dx += A[i * n + j] * (1.0 + i);
        check("gemv into scratch, memcpy out: dx = A^T dy", j, dx[j], want_dx, 1e-12);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
