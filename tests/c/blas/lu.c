/* LAPACK's LU factorization and solves differentiated at the level of the call, by
   matrix-level rules (issue 26 item 2): dgetrf_ alone on square, tall and wide matrices
   (the factors used by the program itself), dgetrf_ followed by dgetrs_ with trans 'N'
   and 'T', dgesv_ (its factors used or not), each with the matrix and right-hand sides
   active or the matrix constant, in reverse and forward mode against a central finite
   difference along a direction that is zero on the constant arguments; a program that
   overwrites the factors, the pivots and the solution after the solve and factors again
   (the rules must keep what their reverse reads); a singular matrix (NaN derivatives);
   sgetrf_/sgetrs_ and sgesv_ in float, against a central difference of the same steps in
   double. The matrices are not diagonally dominant, so that the factorizations pivot. */
#include <stdio.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dgetrf_(const int *, const int *, double *, const int *, int *, int *);
void dgetrs_(const char *, const int *, const int *, const double *, const int *, const int *, double *, const int *,
             int *);
void dgesv_(const int *, const int *, double *, const int *, int *, double *, const int *, int *);
void sgetrf_(const int *, const int *, float *, const int *, int *, int *);
void sgetrs_(const char *, const int *, const int *, const float *, const int *, const int *, float *, const int *,
             int *);
void sgesv_(const int *, const int *, float *, const int *, int *, float *, const int *, int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 48

static double wsum(const double *y) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

/* (A, B) and the configuration: cfg (trans 'T' when 1), m, n; lda = m + 1, ldb = n + 2 */
static double l_getrf(double *A, double *B, int cfg, int m, int n) {
    (void)B, (void)cfg;
    int lda = m + 1, ipiv[8], info;
    dgetrf_(&m, &n, A, &lda, ipiv, &info);
    return wsum(A);
}
static double l_getrs(double *A, double *B, int cfg, int m, int n) {
    (void)m;
    int lda = n + 1, ldb = n + 2, nrhs = 2, ipiv[8], info;
    dgetrf_(&n, &n, A, &lda, ipiv, &info);
    dgetrs_(cfg ? "T" : "N", &n, &nrhs, A, &lda, ipiv, B, &ldb, &info);
    return wsum(B) + 0.5 * wsum(A);
}
static double l_gesv(double *A, double *B, int cfg, int m, int n) {
    (void)m;
    int lda = n + 1, ldb = n + 2, nrhs = 3, ipiv[8], info;
    dgesv_(&n, &nrhs, A, &lda, ipiv, B, &ldb, &info);
    return wsum(B) + (cfg ? 0.0 : 0.5 * wsum(A)); /* cfg 1: the factors unused */
}
/* the factors, pivots and solution overwritten after the solve, then factored again */
static double l_overwrite(double *A, double *B, int cfg, int m, int n) {
    (void)cfg, (void)m;
    int lda = n + 1, ldb = n + 2, nrhs = 2, ipiv[8], info;
    dgetrf_(&n, &n, A, &lda, ipiv, &info);
    dgetrs_("N", &n, &nrhs, A, &lda, ipiv, B, &ldb, &info);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            A[i + j * lda] = sin(A[i + j * lda]) + B[(i + j) % n] * (i == j ? 3.0 : 0.5);
    dgesv_(&n, &nrhs, A, &lda, ipiv, B, &ldb, &info);
    dgetrs_("T", &n, &nrhs, A, &lda, ipiv, B, &ldb, &info);
    return wsum(B) + 0.3 * wsum(A);
}

typedef double (*loss_fn)(double *, double *, int, int, int);

static double A0[SZ], B0[SZ], vA[SZ], vB[SZ];
static double A[SZ], B[SZ], dA[SZ], dB[SZ];
static int CFG, MM, NN;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(B, B0, sizeof B), memset(dA, 0, sizeof dA), memset(dB, 0, sizeof dB);
}

static double fd(loss_fn f, int aA, int aB) {
    double h = 1e-6, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        reset();
        for (int i = 0; i < SZ; i++)
            A[i] += aA * side * h * vA[i], B[i] += aB * side * h * vB[i];
        s += side * f(A, B, CFG, MM, NN);
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
        __enzyme_autodiff((void *)f, SA(A), SB(B), CFG, MM, NN);                                               \
        check(#f " reverse " #SA " " #SB, MM * 10 + NN + CFG / 10.0, projected(ON_##SA, ON_##SB),               \
              fd(f, ON_##SA, ON_##SB), 1e-6);                                                                  \
    } while (0)
#define FWD(f, SA, SB)                                                                                           \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dB, vB, sizeof dB);                                                  \
        double t = __enzyme_fwddiff((void *)f, SA(A), SB(B), CFG, MM, NN);                                     \
        check(#f " forward " #SA " " #SB, MM * 10 + NN + CFG / 10.0, t, fd(f, ON_##SA, ON_##SB), 1e-6);         \
    } while (0)

static float l_float(float *A, float *B, int n) {
    int nrhs = 2, ipiv[8], info;
    sgetrf_(&n, &n, A, &n, ipiv, &info);
    sgetrs_("T", &n, &nrhs, A, &n, ipiv, B, &n, &info);
    sgesv_(&n, &nrhs, A, &n, ipiv, B, &n, &info);
    float s = 0;
    for (int i = 0; i < n * nrhs; i++)
        s += (1.0f + 0.5f * i) * B[i];
    for (int i = 0; i < n * n; i++)
        s += 0.25f * (1.0f + 0.1f * i) * A[i];
    return s;
}

/* l_float's steps in double: its finite difference is the reference (a float one is too coarse) */
static double l_float_twin(double *A, double *B, int n) {
    int nrhs = 2, ipiv[8], info;
    dgetrf_(&n, &n, A, &n, ipiv, &info);
    dgetrs_("T", &n, &nrhs, A, &n, ipiv, B, &n, &info);
    dgesv_(&n, &nrhs, A, &n, ipiv, B, &n, &info);
    double s = 0;
    for (int i = 0; i < n * nrhs; i++)
        s += (1.0 + 0.5 * i) * B[i];
    for (int i = 0; i < n * n; i++)
        s += 0.25 * (1.0 + 0.1 * i) * A[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3; /* 4 */
    for (int i = 0; i < SZ; i++) {
        A0[i] = sin(1.7 * i + 0.3) + 0.2 * cos(0.5 * i), B0[i] = cos(0.3 * i - 0.1);
        vA[i] = 0.3 * sin(1.3 * i), vB[i] = 0.2 * cos(0.9 * i + 1);
    }
    /* dgetrf_ alone: square, tall, wide */
    int shapes[3][2] = {{n, n}, {n + 1, n - 1}, {n - 1, n + 1}};
    for (int s = 0; s < 3; s++) {
        CFG = 0, MM = shapes[s][0], NN = shapes[s][1];
        REV(l_getrf, DUP, CONST);
        FWD(l_getrf, DUP, CONST);
    }
    MM = NN = n;
    for (CFG = 0; CFG <= 1; CFG++) {
        REV(l_getrs, DUP, DUP);
        REV(l_getrs, CONST, DUP);
        FWD(l_getrs, DUP, DUP);
        FWD(l_getrs, CONST, DUP);
    }
    CFG = 0;
    REV(l_gesv, DUP, DUP);
    REV(l_gesv, CONST, DUP);
    FWD(l_gesv, DUP, DUP);
    FWD(l_gesv, CONST, DUP);
    CFG = 1;
    REV(l_gesv, DUP, DUP);
    CFG = 0;
    REV(l_overwrite, DUP, DUP);
    FWD(l_overwrite, DUP, DUP);

    /* a singular matrix: the derivative is NaN */
    {
        reset();
        for (int i = 0; i < n; i++)
            A[i * (n + 1)] = 0; /* column 0 zero */
        MM = NN = n;
        __enzyme_autodiff((void *)l_getrf, DUP(A), CONST(B), 0, MM, NN);
        int nan = 0;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                nan += dA[i + j * (n + 1)] != dA[i + j * (n + 1)];
        check("singular A: NaN adjoints", 0, nan, n * n, 0);
    }

    /* float: sgetrf_, sgetrs_ and sgesv_, all active, against a central difference of the
       same steps in double */
    {
        float fA[SZ], fB[SZ], fdA[SZ], fdB[SZ];
        double want = 0, h = 1e-6;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                A[i] = (float)A0[i] + side * h * vA[i], B[i] = (float)B0[i] + side * h * vB[i];
            want += side * l_float_twin(A, B, n) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fB[i] = (float)B0[i], fdA[i] = 0, fdB[i] = 0;
        __enzyme_autodiff_f((void *)l_float, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, n);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i] + fdB[i] * vB[i];
        check("sgetrf_, sgetrs_, sgesv_ reverse", n, got, want, 1e-3);
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fB[i] = (float)B0[i], fdA[i] = (float)vA[i], fdB[i] = (float)vB[i];
        check("sgetrf_, sgetrs_, sgesv_ forward", n,
              __enzyme_fwddiff_f((void *)l_float, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, n), want, 1e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
