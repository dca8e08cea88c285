/* LAPACK's least squares by the SVD differentiated at the level of the call, by a
   matrix-level rule (issue 26 item 2): dgelsd_ after its workspace query on a tall
   (overdetermined, with a residual), a square and a wide (minimum-norm) full-rank matrix,
   the solution and the singular values used, the matrix and right-hand sides active or
   the matrix constant, in reverse and forward mode against a central finite difference
   along a direction that is zero on the constant arguments; a rank-deficient matrix (NaN
   derivatives: the solution is not differentiable there); sgelsd_ in float against a
   central difference of the same steps in double. */
#include <stdio.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dgelsd_(const int *, const int *, const int *, double *, const int *, double *, const int *, double *,
             const double *, int *, double *, const int *, int *, int *);
void sgelsd_(const int *, const int *, const int *, float *, const int *, float *, const int *, float *, const float *,
             int *, float *, const int *, int *, int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 48

static double RCOND = -1; /* gelsd's rank threshold (-1: machine precision) */

/* lda = m + 1, ldb = max(m, n) + 1, two right-hand sides; the loss reads X (the first n
   rows of B) and the singular values */
static double l_gelsd(double *A, double *B, int m, int n) {
    int k = m < n ? m : n, lda = m + 1, ldb = (m > n ? m : n) + 1, nrhs = 2, lwork = -1, rank, iwork[200], info;
    double s[8], rcond = RCOND, query, work[1000];
    dgelsd_(&m, &n, &nrhs, A, &lda, B, &ldb, s, &rcond, &rank, &query, &lwork, iwork, &info);
    lwork = (int)query;
    dgelsd_(&m, &n, &nrhs, A, &lda, B, &ldb, s, &rcond, &rank, work, &lwork, iwork, &info);
    double r = 0;
    for (int j = 0; j < nrhs; j++)
        for (int i = 0; i < n; i++)
            r += (0.5 + 0.3 * i - 0.2 * j) * B[i + j * ldb];
    for (int i = 0; i < k; i++)
        r += (0.7 - 0.1 * i) * s[i];
    return r;
}

typedef double (*loss_fn)(double *, double *, int, int);

static double A0[SZ], B0[SZ], vA[SZ], vB[SZ];
static double A[SZ], B[SZ], dA[SZ], dB[SZ];
static int MM, NN;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(B, B0, sizeof B), memset(dA, 0, sizeof dA), memset(dB, 0, sizeof dB);
}

static double fd(loss_fn f, int aA, int aB) {
    double h = 1e-6, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        reset();
        for (int i = 0; i < SZ; i++)
            A[i] += aA * side * h * vA[i], B[i] += aB * side * h * vB[i];
        s += side * f(A, B, MM, NN);
    }
    return s / (2 * h);
}

static double projected(int aA, int aB) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += aA * dA[i] * vA[i] + aB * dB[i] * vB[i];
    return s;
}

#define DUP(v) enzyme_dup, &v[0], &d##v[0]
#define CONST(v) enzyme_const, &v[0]
#define ON_DUP 1
#define ON_CONST 0
#define REV(f, SA, SB)                                                                                           \
    do {                                                                                                       \
        reset();                                                                                               \
        __enzyme_autodiff((void *)f, SA(A), SB(B), MM, NN);                                                    \
        check(#f " reverse " #SA " " #SB, MM * 10 + NN, projected(ON_##SA, ON_##SB), fd(f, ON_##SA, ON_##SB),   \
              1e-6);                                                                                           \
    } while (0)
#define FWD(f, SA, SB)                                                                                           \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dB, vB, sizeof dB);                                                  \
        double t = __enzyme_fwddiff((void *)f, SA(A), SB(B), MM, NN);                                          \
        check(#f " forward " #SA " " #SB, MM * 10 + NN, t, fd(f, ON_##SA, ON_##SB), 1e-6);                      \
    } while (0)

static float l_float(float *A, float *B, int m, int n) {
    int nrhs = 2, lwork = 1000, rank, iwork[200], info;
    float s[8], rcond = -1, work[1000];
    sgelsd_(&m, &n, &nrhs, A, &m, B, &m, s, &rcond, &rank, work, &lwork, iwork, &info);
    float r = 0;
    for (int j = 0; j < nrhs; j++)
        for (int i = 0; i < n; i++)
            r += (0.5f + 0.3f * i - 0.2f * j) * B[i + j * m];
    return r + s[0];
}
static double l_float_twin(double *A, double *B, int m, int n) {
    int nrhs = 2, lwork = 1000, rank, iwork[200], info;
    double s[8], rcond = -1, work[1000];
    dgelsd_(&m, &n, &nrhs, A, &m, B, &m, s, &rcond, &rank, work, &lwork, iwork, &info);
    double r = 0;
    for (int j = 0; j < nrhs; j++)
        for (int i = 0; i < n; i++)
            r += (0.5 + 0.3 * i - 0.2 * j) * B[i + j * m];
    return r + s[0];
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3; /* 4 */
    for (int i = 0; i < SZ; i++) {
        A0[i] = sin(1.7 * i + 0.3) + 0.2 * cos(0.5 * i), B0[i] = cos(0.3 * i - 0.1);
        vA[i] = 0.3 * sin(1.3 * i), vB[i] = 0.2 * cos(0.9 * i + 1);
    }
    int shapes[3][2] = {{n + 2, n - 1}, {n, n}, {n - 1, n + 2}};
    for (int c = 0; c < 3; c++) {
        MM = shapes[c][0], NN = shapes[c][1];
        REV(l_gelsd, DUP, DUP);
        REV(l_gelsd, CONST, DUP);
        FWD(l_gelsd, DUP, DUP);
        FWD(l_gelsd, CONST, DUP);
    }

    /* a rank-deficient matrix (two equal columns): no derivative, NaN adjoints */
    {
        MM = n + 2, NN = n - 1;
        reset();
        for (int i = 0; i < MM; i++)
            A[i + (MM + 1)] = A[i];
        RCOND = 1e-10; /* rank 2 by gelsd's test, whatever the rounding */
        __enzyme_autodiff((void *)l_gelsd, DUP(A), DUP(B), MM, NN);
        RCOND = -1;
        int nan = 0;
        for (int j = 0; j < NN; j++)
            for (int i = 0; i < MM; i++)
                nan += dA[i + j * (MM + 1)] != dA[i + j * (MM + 1)];
        check("rank-deficient A: NaN adjoints", MM, nan, MM * NN, 0);
    }

    /* float: sgelsd_, tall, all active */
    {
        float fA[SZ], fB[SZ], fdA[SZ], fdB[SZ];
        double want = 0, h = 1e-6;
        int m = n + 2, nn = n - 1;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                A[i] = (float)A0[i] + side * h * vA[i], B[i] = (float)B0[i] + side * h * vB[i];
            want += side * l_float_twin(A, B, m, nn) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fB[i] = (float)B0[i], fdA[i] = 0, fdB[i] = 0;
        __enzyme_autodiff_f((void *)l_float, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, m, nn);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i] + fdB[i] * vB[i];
        check("sgelsd_ reverse", m, got, want, 1e-3);
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fB[i] = (float)B0[i], fdA[i] = (float)vA[i], fdB[i] = (float)vB[i];
        check("sgelsd_ forward", m, __enzyme_fwddiff_f((void *)l_float, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, m, nn),
              want, 1e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
