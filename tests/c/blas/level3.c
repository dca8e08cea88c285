/* The level-3 BLAS rules besides gemm (issue 26 items 1 and 4): symm (left and right),
   syrk (with and without transpose), trmm and trsm (left and right, upper and lower,
   transposed, unit diagonal), row- and column-major, rectangular, with the matrices and
   alpha/beta active or constant (an output that receives active data must be dup);
   the Fortran spellings dsymm_, dsyrk_, dtrmm_, dtrsm_; a float chain. Reverse and forward
   mode against a central finite difference along a direction that is zero on the
   constant arguments. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dsymm_(const char *, const char *, const int *, const int *, const double *, const double *, const int *,
            const double *, const int *, const double *, double *, const int *);
void dsyrk_(const char *, const char *, const int *, const int *, const double *, const double *, const int *,
            const double *, double *, const int *);
void dtrmm_(const char *, const char *, const char *, const char *, const int *, const int *, const double *,
            const double *, const int *, double *, const int *);
void dtrsm_(const char *, const char *, const char *, const char *, const int *, const int *, const double *,
            const double *, const int *, double *, const int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 64

static double wsum(const double *y) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

/* (A, B, C, alpha, beta) and the configuration: layout, side, uplo, trans, diag, m, n, fortran */
#define PARAMS double *A, double *B, double *C, double *a, double *b, int L, int S, int U, int T, int D, int m, int n, int F
#define CH(cond, yes, no) ((cond) ? yes : no)
static double l_symm(PARAMS) {
    (void)T, (void)D;
    int ka = S == CblasLeft ? m : n, lda = ka + 1, ldb = (L == CblasRowMajor ? n : m) + 1, ldc = ldb;
    if (F)
        dsymm_(CH(S == CblasLeft, "L", "r"), CH(U == CblasUpper, "U", "l"), &m, &n, a, A, &lda, B, &ldb, b, C, &ldc);
    else
        cblas_dsymm(L, S, U, m, n, *a, A, lda, B, ldb, *b, C, ldc);
    return wsum(C);
}
static double l_syrk(PARAMS) {
    (void)B, (void)S, (void)D;
    int k = m, lda = (T == CblasNoTrans) == (L == CblasRowMajor) ? k + 1 : n + 1, ldc = n + 2;
    if (F)
        dsyrk_(CH(U == CblasUpper, "U", "L"), CH(T == CblasTrans, "T", "N"), &n, &k, a, A, &lda, b, C, &ldc);
    else
        cblas_dsyrk(L, U, T, n, k, *a, A, lda, *b, C, ldc);
    return wsum(C);
}
static double l_trmm(PARAMS) {
    (void)C, (void)b;
    int ka = S == CblasLeft ? m : n, lda = ka + 1, ldb = (L == CblasRowMajor ? n : m) + 1;
    if (F)
        dtrmm_(CH(S == CblasLeft, "L", "R"), CH(U == CblasUpper, "U", "L"), CH(T == CblasTrans, "T", "N"),
               CH(D == CblasUnit, "U", "N"), &m, &n, a, A, &lda, B, &ldb);
    else
        cblas_dtrmm(L, S, U, T, D, m, n, *a, A, lda, B, ldb);
    return wsum(B);
}
static double l_trsm(PARAMS) {
    (void)C, (void)b;
    int ka = S == CblasLeft ? m : n, lda = ka + 1, ldb = (L == CblasRowMajor ? n : m) + 1;
    if (F)
        dtrsm_(CH(S == CblasLeft, "l", "R"), CH(U == CblasUpper, "U", "L"), CH(T == CblasTrans, "T", "n"),
               CH(D == CblasUnit, "u", "N"), &m, &n, a, A, &lda, B, &ldb);
    else
        cblas_dtrsm(L, S, U, T, D, m, n, *a, A, lda, B, ldb);
    return wsum(B);
}

typedef double (*loss_fn)(PARAMS);

static double A0[SZ], B0[SZ], C0[SZ], a0, b0, vA[SZ], vB[SZ], vC[SZ], va, vb;
static double A[SZ], B[SZ], C[SZ], a, b, dA[SZ], dB[SZ], dC[SZ], da, db;
static int LAY, SIDE, UPLO, TR, DIAG, M, N, FORT;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(B, B0, sizeof B), memcpy(C, C0, sizeof C), a = a0, b = b0;
    memset(dA, 0, sizeof dA), memset(dB, 0, sizeof dB), memset(dC, 0, sizeof dC), da = db = 0;
}

static double fd(loss_fn f, int aA, int aB, int aC, int aa, int ab) {
    double h = 1e-5, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        reset();
        for (int i = 0; i < SZ; i++)
            A[i] += aA * side * h * vA[i], B[i] += aB * side * h * vB[i], C[i] += aC * side * h * vC[i];
        a += aa * side * h * va, b += ab * side * h * vb;
        s += side * f(A, B, C, &a, &b, LAY, SIDE, UPLO, TR, DIAG, M, N, FORT);
    }
    return s / (2 * h);
}

static double projected(int aA, int aB, int aC, int aa, int ab) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += aA * dA[i] * vA[i] + aB * dB[i] * vB[i] + aC * dC[i] * vC[i];
    return s + aa * da * va + ab * db * vb;
}

#define DUP(v) enzyme_dup, &v[0], &d##v[0]
#define CONST(v) enzyme_const, &v[0]
#define DUP1(v) enzyme_dup, &v, &d##v
#define CONST1(v) enzyme_const, &v
#define ON_DUP 1
#define ON_CONST 0
#define ARGS LAY, SIDE, UPLO, TR, DIAG, M, N, FORT
#define REV(f, SA, SB, SC, SAL, SBE)                                                                             \
    do {                                                                                                       \
        reset();                                                                                               \
        __enzyme_autodiff((void *)f, SA(A), SB(B), SC(C), SAL##1(a), SBE##1(b), ARGS);                         \
        check(#f " reverse " #SA " " #SB " " #SC " " #SAL " " #SBE, config,                                     \
              projected(ON_##SA, ON_##SB, ON_##SC, ON_##SAL, ON_##SBE),                                        \
              fd(f, ON_##SA, ON_##SB, ON_##SC, ON_##SAL, ON_##SBE), 1e-6);                                     \
    } while (0)
#define FWD(f, SA, SB, SC, SAL, SBE)                                                                             \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dB, vB, sizeof dB), memcpy(dC, vC, sizeof dC), da = va, db = vb;      \
        double t = __enzyme_fwddiff((void *)f, SA(A), SB(B), SC(C), SAL##1(a), SBE##1(b), ARGS);                 \
        check(#f " forward " #SA " " #SB " " #SC " " #SAL " " #SBE, config, t,                                  \
              fd(f, ON_##SA, ON_##SB, ON_##SC, ON_##SAL, ON_##SBE), 1e-6);                                     \
    } while (0)

static float l_chain_s(float *A, float *B, float *C, int m, int n) {
    cblas_ssymm(CblasRowMajor, CblasLeft, CblasUpper, m, n, 0.5f, A, m, B, n, 1.0f, C, n);
    cblas_strmm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, n, m, 1.0f, A, m, C, n);
    cblas_ssyrk(CblasRowMajor, CblasLower, CblasNoTrans, m, n, 0.25f, C, n, 1.0f, A, m);
    cblas_strsm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, n, 1.0f, A, m, B, n);
    float s = 0;
    for (int i = 0; i < m * n; i++)
        s += (1.0f + 0.25f * i) * (B[i] + C[i]);
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < SZ; i++) {
        A0[i] = 0.3 * sin(0.7 * i + 0.2), B0[i] = cos(0.3 * i - 0.1), C0[i] = 0.5 - 0.05 * i;
        vA[i] = 0.3 * sin(1.3 * i), vB[i] = 0.2 * cos(0.9 * i + 1), vC[i] = 0.1 * ((i * 7) % 5) - 0.2;
    }
    for (int i = 0; i < 5; i++) /* strong diagonals for lda 3..5 (triangular solves) */
        for (int ld = 3; ld <= 5; ld++)
            A0[i * (ld + 1)] = 2.0 + 0.1 * i;
    a0 = 1.3, b0 = 0.7, va = 0.4, vb = -0.3;
    int config = 0;
    for (FORT = 0; FORT <= 1; FORT++)
        for (int c = 0; c < (FORT ? 2 : 4); c++, config++) {
            M = argc + 2, N = argc + 3; /* 3 x 4 */
            LAY = FORT || c % 2 ? CblasColMajor : CblasRowMajor;
            SIDE = c < 2 ? CblasLeft : CblasRight;
            UPLO = c == 1 || c == 2 ? CblasUpper : CblasLower;
            TR = c == 0 || c == 3 ? CblasTrans : CblasNoTrans;
            DIAG = c == 2 ? CblasUnit : CblasNonUnit;
            REV(l_symm, DUP, DUP, DUP, DUP, DUP);
            REV(l_symm, DUP, CONST, DUP, CONST, CONST);
            REV(l_symm, CONST, DUP, DUP, DUP, CONST);
            FWD(l_symm, DUP, DUP, DUP, DUP, DUP);
            REV(l_syrk, DUP, CONST, DUP, DUP, DUP);
            REV(l_syrk, CONST, CONST, DUP, DUP, CONST);
            FWD(l_syrk, DUP, CONST, DUP, DUP, DUP);
            REV(l_trmm, DUP, DUP, CONST, DUP, CONST);
            REV(l_trmm, DUP, DUP, CONST, CONST, CONST);
            REV(l_trmm, CONST, DUP, CONST, DUP, CONST);
            FWD(l_trmm, DUP, DUP, CONST, DUP, CONST);
            REV(l_trsm, DUP, DUP, CONST, DUP, CONST);
            REV(l_trsm, DUP, DUP, CONST, CONST, CONST);
            REV(l_trsm, CONST, DUP, CONST, DUP, CONST);
            FWD(l_trsm, DUP, DUP, CONST, DUP, CONST);
        }

    /* float: ssymm, strmm, ssyrk, strsm in one chain, all active */
    {
        int m = argc + 2, n = argc + 3;
        float fA[SZ], fB[SZ], fC[SZ], fdA[SZ], fdB[SZ], fdC[SZ], want = 0, h = 1e-3f;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                fA[i] = (float)(A0[i] + side * h * vA[i]), fB[i] = (float)(B0[i] + side * h * vB[i]),
                fC[i] = (float)(C0[i] + side * h * vC[i]);
            for (int i = 0; i < m; i++) /* the solve's diagonal, at lda = m */
                fA[i * (m + 1)] += 2.0f;
            want += side * l_chain_s(fA, fB, fC, m, n) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fB[i] = (float)B0[i], fC[i] = (float)C0[i], fdA[i] = fdB[i] = fdC[i] = 0;
        for (int i = 0; i < m; i++)
            fA[i * (m + 1)] += 2.0f;
        float keepA[SZ];
        memcpy(keepA, fA, sizeof fA);
        __enzyme_autodiff_f((void *)l_chain_s, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, enzyme_dup, fC, fdC, m, n);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i] + fdB[i] * vB[i] + fdC[i] * vC[i];
        check("float level-3 chain reverse", m, got, want, 3e-3);
        for (int i = 0; i < SZ; i++)
            fB[i] = (float)B0[i], fC[i] = (float)C0[i], fdA[i] = (float)vA[i], fdB[i] = (float)vB[i],
            fdC[i] = (float)vC[i];
        memcpy(fA, keepA, sizeof fA);
        check("float level-3 chain forward", m,
              __enzyme_fwddiff_f((void *)l_chain_s, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, enzyme_dup, fC, fdC, m, n),
              want, 3e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
