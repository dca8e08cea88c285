/* cblas_dgemm / cblas_sgemm / dgemm_ / sgemm_ differentiated at the level of the call
   (issue 26 items 1 and 4): C = alpha op(A) op(B) + beta C with every activity
   combination (A, B dup or const; alpha, beta active or const, passed through pointers so
   that one prototype serves all), row- and column-major, both transposes, rectangular
   shapes and leading dimensions larger than the rows. Reverse and forward mode are
   compared with a central finite difference of the loss sum(W .* C) along a direction
   that is zero on the constant arguments. Built with zymase cc ... -lopenblas. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
            const int *, const double *, const int *, const double *, double *, const int *);
void sgemm_(const char *, const char *, const int *, const int *, const int *, const float *, const float *,
            const int *, const float *, const int *, const float *, float *, const int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 64 /* room for every matrix here */

/* sum(W .* C) over the m x n matrix C */
static double wsum(int layout, int m, int n, const double *C, int ldc) {
    double s = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            s += (0.5 + 0.25 * i - 0.125 * j) * C[layout == CblasRowMajor ? i * ldc + j : i + j * ldc];
    return s;
}

static double loss(const double *A, const double *B, double *C, const double *alpha, const double *beta, int layout,
                   int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
    cblas_dgemm(layout, ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    return wsum(layout, m, n, C, ldc);
}

/* the Fortran spelling: column-major, everything by pointer */
static double loss_f(const double *A, const double *B, double *C, const double *alpha, const double *beta,
                     const char *ta, const char *tb, int m, int n, int k, int lda, int ldb, int ldc) {
    dgemm_(ta, tb, &m, &n, &k, alpha, A, &lda, B, &ldb, beta, C, &ldc);
    return wsum(CblasColMajor, m, n, C, ldc);
}

static float wsumf(int layout, int m, int n, const float *C, int ldc) {
    float s = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            s += (0.5f + 0.25f * i - 0.125f * j) * C[layout == CblasRowMajor ? i * ldc + j : i + j * ldc];
    return s;
}

static float loss_s(const float *A, const float *B, float *C, const float *alpha, const float *beta, int layout,
                    int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
    cblas_sgemm(layout, ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    return wsumf(layout, m, n, C, ldc);
}

static float loss_sf(const float *A, const float *B, float *C, const float *alpha, const float *beta,
                     const char *ta, const char *tb, int m, int n, int k, int lda, int ldb, int ldc) {
    sgemm_(ta, tb, &m, &n, &k, alpha, A, &lda, B, &ldb, beta, C, &ldc);
    return wsumf(CblasColMajor, m, n, C, ldc);
}

/* Inputs, directions (v*), shadows (d*) and the active flags of one case */
static double A0[SZ], B0[SZ], C0[SZ], al0, be0, vA[SZ], vB[SZ], vC[SZ], val, vbe;
static double A[SZ], B[SZ], C[SZ], al, be, dA[SZ], dB[SZ], dC[SZ], dal, dbe;
static int L, TA, TB, M, N, K, LDA, LDB, LDC;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(B, B0, sizeof B), memcpy(C, C0, sizeof C), al = al0, be = be0;
    memset(dA, 0, sizeof dA), memset(dB, 0, sizeof dB), memset(dC, 0, sizeof dC), dal = dbe = 0;
}

/* The loss at the inputs moved by t along the directions of the active arguments. */
static double moved(double t, int aA, int aB, int aal, int abe, int fortran) {
    reset();
    for (int i = 0; i < SZ; i++)
        A[i] += aA * t * vA[i], B[i] += aB * t * vB[i], C[i] += t * vC[i];
    al += aal * t * val, be += abe * t * vbe;
    const char *ta = TA == CblasTrans ? "T" : "N", *tb = TB == CblasTrans ? "T" : "N";
    return fortran ? loss_f(A, B, C, &al, &be, ta, tb, M, N, K, LDA, LDB, LDC)
                   : loss(A, B, C, &al, &be, L, TA, TB, M, N, K, LDA, LDB, LDC);
}

static double fd(int aA, int aB, int aal, int abe, int fortran) {
    double h = 1e-5;
    return (moved(h, aA, aB, aal, abe, fortran) - moved(-h, aA, aB, aal, abe, fortran)) / (2 * h);
}

/* sum of shadow . direction over the active arguments, after a reverse call */
static double projected(int aA, int aB, int aal, int abe) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += aA * dA[i] * vA[i] + aB * dB[i] * vB[i] + dC[i] * vC[i];
    return s + aal * dal * val + abe * dbe * vbe;
}

#define DUP(x) enzyme_dup, &x[0], &d##x[0]
#define CONST(x) enzyme_const, &x[0]
#define DUP1(x) enzyme_dup, &x, &d##x
#define CONST1(x) enzyme_const, &x
#define ON_DUP 1
#define ON_CONST 0
#define ARGS L, TA, TB, M, N, K, LDA, LDB, LDC
#define REV(SA, SB, SAL, SBE)                                                                                    \
    do {                                                                                                       \
        reset();                                                                                               \
        for (int i = 0; i < SZ; i++) dC[i] = 0;                                                                \
        __enzyme_autodiff((void *)loss, SA(A), SB(B), DUP(C), SAL##1(al), SBE##1(be), ARGS);                    \
        check("reverse " #SA " " #SB " " #SAL " " #SBE, config, projected(ON_##SA, ON_##SB, ON_##SAL, ON_##SBE), \
              fd(ON_##SA, ON_##SB, ON_##SAL, ON_##SBE, 0), 1e-6);                                              \
    } while (0)
#define FWD(SA, SB, SAL, SBE)                                                                                    \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dB, vB, sizeof dB), memcpy(dC, vC, sizeof dC), dal = val, dbe = vbe;  \
        double t = __enzyme_fwddiff((void *)loss, SA(A), SB(B), DUP(C), SAL##1(al), SBE##1(be), ARGS);           \
        check("forward " #SA " " #SB " " #SAL " " #SBE, config, t, fd(ON_##SA, ON_##SB, ON_##SAL, ON_##SBE, 0),  \
              1e-6);                                                                                           \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < SZ; i++) {
        A0[i] = sin(0.7 * i + 0.2), B0[i] = cos(0.3 * i - 0.1), C0[i] = 0.5 - 0.05 * i;
        vA[i] = 0.3 * sin(1.3 * i), vB[i] = 0.2 * cos(0.9 * i + 1), vC[i] = 0.1 * ((i * 7) % 5) - 0.2;
    }
    al0 = 1.3, be0 = 0.7, val = 0.4, vbe = -0.3;
    int config = 0;
    for (L = CblasRowMajor; L <= CblasColMajor; L++)
        for (TA = CblasNoTrans; TA <= CblasTrans; TA++)
            for (TB = CblasNoTrans; TB <= CblasTrans; TB++, config++) {
                M = argc + 2, N = argc + 3, K = argc + 1; /* 3 x 4 x 2 */
                int ra = TA == CblasNoTrans ? M : K, ca = TA == CblasNoTrans ? K : M;
                int rb = TB == CblasNoTrans ? K : N, cb = TB == CblasNoTrans ? N : K;
                /* leading dimensions one larger than needed */
                LDA = (L == CblasRowMajor ? ca : ra) + 1, LDB = (L == CblasRowMajor ? cb : rb) + 1;
                LDC = (L == CblasRowMajor ? N : M) + 1;
                REV(DUP, DUP, DUP, DUP);
                REV(DUP, DUP, DUP, CONST);
                REV(DUP, DUP, CONST, DUP);
                REV(DUP, DUP, CONST, CONST);
                REV(DUP, CONST, DUP, DUP);
                REV(DUP, CONST, CONST, CONST);
                REV(CONST, DUP, DUP, CONST);
                REV(CONST, DUP, CONST, CONST);
                REV(CONST, CONST, DUP, DUP);
                REV(CONST, CONST, CONST, DUP);
                REV(CONST, CONST, CONST, CONST);
                FWD(DUP, DUP, DUP, DUP);
                FWD(DUP, CONST, CONST, DUP);
                FWD(CONST, DUP, DUP, CONST);
                FWD(CONST, CONST, CONST, CONST);
                if (L == CblasColMajor) { /* the Fortran spelling, column-major only */
                    const char *ta = TA == CblasTrans ? "T" : "N", *tb = TB == CblasTrans ? "t" : "n";
                    reset();
                    __enzyme_autodiff((void *)loss_f, DUP(A), DUP(B), DUP(C), DUP1(al), DUP1(be), enzyme_const, ta,
                                      enzyme_const, tb, M, N, K, LDA, LDB, LDC);
                    check("dgemm_ reverse all active", config, projected(1, 1, 1, 1), fd(1, 1, 1, 1, 1), 1e-6);
                    reset();
                    __enzyme_autodiff((void *)loss_f, CONST(A), DUP(B), DUP(C), CONST1(al), DUP1(be), enzyme_const,
                                      ta, enzyme_const, tb, M, N, K, LDA, LDB, LDC);
                    check("dgemm_ reverse B, beta active", config, projected(0, 1, 0, 1), fd(0, 1, 0, 1, 1), 1e-6);
                    reset();
                    memcpy(dA, vA, sizeof dA), memcpy(dB, vB, sizeof dB), memcpy(dC, vC, sizeof dC), dal = val,
                        dbe = vbe;
                    double t = __enzyme_fwddiff((void *)loss_f, DUP(A), DUP(B), DUP(C), DUP1(al), DUP1(be),
                                                enzyme_const, ta, enzyme_const, tb, M, N, K, LDA, LDB, LDC);
                    check("dgemm_ forward all active", config, t, fd(1, 1, 1, 1, 1), 1e-6);
                }
            }

    /* float: cblas_sgemm and sgemm_, all active, against a float central difference */
    {
        float fA[SZ], fB[SZ], fC[SZ], fdA[SZ], fdB[SZ], fdC[SZ], fal = 1.3f, fbe = 0.7f, fdal = 0, fdbe = 0;
        int m = argc + 2, n = argc + 1, k = argc + 3;
        for (int layout = CblasRowMajor; layout <= CblasColMajor; layout++)
            for (int fortran = 0; fortran <= (layout == CblasColMajor); fortran++) {
                int lda = layout == CblasRowMajor ? m : k, ldb = layout == CblasRowMajor ? k : n; /* A^T, B^T */
                int ldc = layout == CblasRowMajor ? n : m;
                float want = 0, h = 1e-2f;
                for (int side = -1; side <= 1; side += 2) {
                    for (int i = 0; i < SZ; i++)
                        fA[i] = (float)(A0[i] + side * h * vA[i]), fB[i] = (float)(B0[i] + side * h * vB[i]),
                        fC[i] = (float)(C0[i] + side * h * vC[i]);
                    float a = (float)(al0 + side * h * val), b = (float)(be0 + side * h * vbe);
                    float l = fortran ? loss_sf(fA, fB, fC, &a, &b, "T", "T", m, n, k, lda, ldb, ldc)
                                      : loss_s(fA, fB, fC, &a, &b, layout, CblasTrans, CblasTrans, m, n, k, lda, ldb, ldc);
                    want += side * l / (2 * h);
                }
                for (int i = 0; i < SZ; i++)
                    fA[i] = (float)A0[i], fB[i] = (float)B0[i], fC[i] = (float)C0[i], fdA[i] = fdB[i] = fdC[i] = 0;
                fal = 1.3f, fbe = 0.7f, fdal = fdbe = 0;
                if (fortran)
                    __enzyme_autodiff_f((void *)loss_sf, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, enzyme_dup, fC, fdC,
                                        enzyme_dup, &fal, &fdal, enzyme_dup, &fbe, &fdbe, enzyme_const, "T",
                                        enzyme_const, "T", m, n, k, lda, ldb, ldc);
                else
                    __enzyme_autodiff_f((void *)loss_s, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, enzyme_dup, fC, fdC,
                                        enzyme_dup, &fal, &fdal, enzyme_dup, &fbe, &fdbe, layout, CblasTrans,
                                        CblasTrans, m, n, k, lda, ldb, ldc);
                double got = fdal * val + fdbe * vbe;
                for (int i = 0; i < SZ; i++)
                    got += fdA[i] * vA[i] + fdB[i] * vB[i] + fdC[i] * vC[i];
                check(fortran ? "sgemm_ reverse all active" : "cblas_sgemm reverse all active", layout, got, want, 2e-3);
                for (int i = 0; i < SZ; i++)
                    fA[i] = (float)A0[i], fB[i] = (float)B0[i], fC[i] = (float)C0[i], fdA[i] = (float)vA[i],
                    fdB[i] = (float)vB[i], fdC[i] = (float)vC[i];
                fal = 1.3f, fbe = 0.7f, fdal = (float)val, fdbe = (float)vbe;
                float t = fortran
                    ? __enzyme_fwddiff_f((void *)loss_sf, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, enzyme_dup, fC, fdC,
                                         enzyme_dup, &fal, &fdal, enzyme_dup, &fbe, &fdbe, enzyme_const, "T",
                                         enzyme_const, "T", m, n, k, lda, ldb, ldc)
                    : __enzyme_fwddiff_f((void *)loss_s, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, enzyme_dup, fC, fdC,
                                         enzyme_dup, &fal, &fdal, enzyme_dup, &fbe, &fdbe, layout, CblasTrans,
                                         CblasTrans, m, n, k, lda, ldb, ldc);
                check(fortran ? "sgemm_ forward all active" : "cblas_sgemm forward all active", layout, t, want, 2e-3);
            }
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
