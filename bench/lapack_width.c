/* LAPACK derivatives at width 4 against 4 width-1 calls (issue 25 item 2: "one primal
   computation and N-wide tangent arithmetic, not N copies of the derivative"). At width N
   a LAPACK rule's derivative is one runtime call for every lane (_fwd_lanes, _rev_lanes in
   autodiff/rules/lapack_*.h): the factorization or decomposition it needs is computed once
   and the lanes' right-hand sides are solved in one call. Workloads (n x n, column-major):
     solve-const  dgesv_, the matrix constant, one right-hand side active (forward)
     solve        dgesv_, matrix and right-hand side active (forward, reverse)
     lu           dgetrf_ + dgetrs_, both active (forward, reverse)
     eigen        dsyevd_ with eigenvectors (forward, reverse)
   Each timed round runs the width-4 derivative once and the width-1 derivative 4 times
   (one per lane), alternately, in process CPU time; reported: the minima and the median
   of the per-round ratios width-4 / (4 x width-1) (below 1: the lanes share work).

     zymase cc -O2 bench/lapack_width.c -o /tmp/lapack_width -lopenblas
     OPENBLAS_NUM_THREADS=1 /tmp/lapack_width 200 9
     OPENBLAS_NUM_THREADS=1 /tmp/lapack_width 500 5 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_width;
extern double __enzyme_fwddiff(void *, ...);
extern void __enzyme_autodiff(void *, ...);

void dgesv_(const int *, const int *, double *, const int *, int *, double *, const int *, int *);
void dgetrf_(const int *, const int *, double *, const int *, int *, int *);
void dgetrs_(const char *, const int *, const int *, const double *, const int *, const int *, double *, const int *,
             int *);
void dsyevd_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *,
             const int *, int *);

#define W 4

static int n;

/* out = c . X with A X = b (A overwritten by its factors, b by X) */
static void solve(double *restrict A, double *restrict b, double *restrict out) {
    int one = 1, info, *ipiv = malloc((size_t)n * sizeof(int));
    dgesv_(&n, &one, A, &n, ipiv, b, &n, &info);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0 + 1e-3 * (i % 97)) * b[i];
    *out = s;
    free(ipiv);
}

static void lu(double *restrict A, double *restrict b, double *restrict out) {
    int one = 1, info, *ipiv = malloc((size_t)n * sizeof(int));
    dgetrf_(&n, &n, A, &n, ipiv, &info);
    dgetrs_("N", &n, &one, A, &n, ipiv, b, &n, &info);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0 + 1e-3 * (i % 97)) * b[i] + 1e-3 * A[i * (n + 1)];
    *out = s;
    free(ipiv);
}

static void eigen(double *restrict A, double *restrict b, double *restrict out) {
    (void)b;
    int lwork = -1, liwork = -1, iquery, info;
    double query, *w = malloc((size_t)n * sizeof(double));
    dsyevd_("V", "L", &n, A, &n, w, &query, &lwork, &iquery, &liwork, &info);
    lwork = (int)query, liwork = iquery;
    double *work = malloc((size_t)lwork * sizeof(double));
    int *iwork = malloc((size_t)liwork * sizeof(int));
    dsyevd_("V", "L", &n, A, &n, w, work, &lwork, iwork, &liwork, &info);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0 + 0.01 * i) * w[i] + 1e-3 * A[i + 3 * n] * A[i + 3 * n];
    *out = s;
    free(w), free(work), free(iwork);
}

static double *A0, *b0, *dA0, *db0, *A, *b, *dA, *db, out, dout[W];

/* the inputs, and every lane's tangents (forward; reverse seeds them afterwards) */
static void reset(void) {
    long nn = (long)n * n;
    memcpy(A, A0, nn * sizeof(double)), memcpy(b, b0, n * sizeof(double));
    memcpy(dA, dA0, W * nn * sizeof(double)), memcpy(db, db0, W * n * sizeof(double));
}

static void seed_reverse(void) {
    memset(dA, 0, (size_t)W * n * n * sizeof(double)), memset(db, 0, (size_t)W * n * sizeof(double));
    for (int k = 0; k < W; k++)
        dout[k] = 1.0 + k;
}

#define STRIDE_A ((long)n * n * (long)sizeof(double))
#define STRIDE_B ((long)n * (long)sizeof(double))
/* one width-1 derivative of F for lane k (A constant when CONST_A) */
#define FWD1(F, CONST_A, k)                                                                                     \
    ((CONST_A) ? __enzyme_fwddiff((void *)F, enzyme_const, A, enzyme_dup, b, db + (long)(k) * n, enzyme_dup, &out, \
                                  &dout[k])                                                                     \
               : __enzyme_fwddiff((void *)F, enzyme_dup, A, dA + (long)(k) * n * n, enzyme_dup, b,              \
                                  db + (long)(k) * n, enzyme_dup, &out, &dout[k]))
#define FWD4(F, CONST_A)                                                                                        \
    ((CONST_A) ? __enzyme_fwddiff((void *)F, enzyme_width, W, enzyme_const, A, enzyme_dupv, STRIDE_B, b, db,    \
                                  enzyme_dupv, (long)sizeof(double), &out, dout)                                \
               : __enzyme_fwddiff((void *)F, enzyme_width, W, enzyme_dupv, STRIDE_A, A, dA, enzyme_dupv,        \
                                  STRIDE_B, b, db, enzyme_dupv, (long)sizeof(double), &out, dout))
#define REV1(F, k)                                                                                              \
    __enzyme_autodiff((void *)F, enzyme_dup, A, dA + (long)(k) * n * n, enzyme_dup, b, db + (long)(k) * n,      \
                      enzyme_dup, &out, &dout[k])
#define REV4(F)                                                                                                 \
    __enzyme_autodiff((void *)F, enzyme_width, W, enzyme_dupv, STRIDE_A, A, dA, enzyme_dupv, STRIDE_B, b, db,   \
                      enzyme_dupv, (long)sizeof(double), &out, dout)

/* CPU time of this process (OpenBLAS runs single-threaded: OPENBLAS_NUM_THREADS=1): on a
   shared machine the wall clock counts the other processes' time slices too */
static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int by_value(const void *x, const void *y) {
    double u = *(const double *)x, v = *(const double *)y;
    return (u > v) - (u < v);
}

static void report(const char *what, const double *t4, const double *t1, int reps) {
    double m4 = 1e30, m1 = 1e30, ratio[64];
    for (int r = 0; r < reps; r++) {
        m4 = t4[r] < m4 ? t4[r] : m4, m1 = t1[r] < m1 ? t1[r] : m1;
        ratio[r] = t4[r] / t1[r];
    }
    qsort(ratio, (size_t)reps, sizeof(double), by_value);
    printf("%-20s n=%-4d width 4 %8.2f ms  4 x width 1 %8.2f ms  ratio of minima %.2f  median round ratio %.2f\n",
           what, n, 1e3 * m4, 1e3 * m1, m4 / m1, ratio[reps / 2]);
}

/* Check lane 0 of the width-4 derivative against the width-1 one, then time `reps` rounds. */
#define BENCH(NAME, ONE, FOUR, SEED)                                                                            \
    do {                                                                                                        \
        double t4[64], t1[64], lane0;                                                                           \
        reset(), SEED;                                                                                          \
        FOUR;                                                                                                   \
        lane0 = dout[0] + db[0] + dA[1];                                                                        \
        reset(), SEED;                                                                                          \
        {                                                                                                       \
            int k = 0;                                                                                          \
            ONE;                                                                                                \
        }                                                                                                       \
        if (fabs(lane0 - (dout[0] + db[0] + dA[1])) > 1e-8 * fmax(1, fabs(lane0)))                              \
            printf("MISMATCH %s: %.15g vs %.15g\n", NAME, lane0, dout[0] + db[0] + dA[1]);                      \
        for (int r = 0; r < reps; r++) { /* the resets are not timed */                                       \
            reset(), SEED;                                                                                      \
            double t = seconds();                                                                               \
            FOUR;                                                                                               \
            t4[r] = seconds() - t;                                                                              \
            t1[r] = 0;                                                                                          \
            for (int k = 0; k < W; k++) {                                                                       \
                reset(), SEED;                                                                                  \
                t = seconds();                                                                                  \
                ONE;                                                                                            \
                t1[r] += seconds() - t;                                                                         \
            }                                                                                                   \
        }                                                                                                       \
        report(NAME, t4, t1, reps);                                                                             \
    } while (0)

int main(int argc, char **argv) {
    n = argc > 1 ? atoi(argv[1]) : 200;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    reps = reps > 64 ? 64 : reps;
    long nn = (long)n * n;
    A0 = malloc(nn * sizeof(double)), b0 = malloc(n * sizeof(double));
    A = malloc(nn * sizeof(double)), b = malloc(n * sizeof(double));
    dA = malloc(W * nn * sizeof(double)), db = malloc(W * n * sizeof(double));
    dA0 = malloc(W * nn * sizeof(double)), db0 = malloc(W * n * sizeof(double));
    for (int k = 0; k < W; k++) { /* lane k's tangents */
        for (long i = 0; i < nn; i++)
            dA0[k * nn + i] = 1e-2 * sin(0.3 * (double)i + k);
        for (int i = 0; i < n; i++)
            db0[(long)k * n + i] = cos(0.2 * i - k);
    }
    for (long i = 0; i < nn; i++)
        A0[i] = sin(0.37 * (double)i + 0.1) * cos(0.011 * (double)i);
    for (long j = 0; j < n; j++) /* symmetric, well conditioned */
        for (long i = 0; i < j; i++)
            A0[i + j * n] = A0[j + i * n];
    for (long i = 0; i < n; i++)
        A0[i + i * n] += 4;
    for (int i = 0; i < n; i++)
        b0[i] = cos(0.13 * i);
    BENCH("solve-const fwd", FWD1(solve, 1, k), FWD4(solve, 1), (void)0);
    BENCH("solve fwd", FWD1(solve, 0, k), FWD4(solve, 0), (void)0);
    BENCH("solve rev", REV1(solve, k), REV4(solve), seed_reverse());
    BENCH("lu fwd", FWD1(lu, 0, k), FWD4(lu, 0), (void)0);
    BENCH("lu rev", REV1(lu, k), REV4(lu), seed_reverse());
    BENCH("eigen fwd", FWD1(eigen, 0, k), FWD4(eigen, 0), (void)0);
    BENCH("eigen rev", REV1(eigen, k), REV4(eigen), seed_reverse());
    return 0;
}
