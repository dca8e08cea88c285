/* The second group of BLAS rules (issue 26 items 1 and 4): nrm2, asum, swap, iamax (an
   index: no derivative), ger, symv, trmv and trsv, in the CBLAS spelling (double; a float
   chain) and the Fortran one (dnrm2_, dger_, dsymv_, dtrmv_, dtrsv_), row- and column-major,
   upper and lower triangles, transposed, unit and non-unit diagonals, strided vectors, with
   the matrix, the vectors and alpha/beta active or constant (an output that receives
   active data must be dup, as for any store). Reverse and forward mode
   against a central finite difference along a direction that is zero on the constants. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

double dnrm2_(const int *, const double *, const int *);
void dger_(const int *, const int *, const double *, const double *, const int *, const double *, const int *,
           double *, const int *);
void dsymv_(const char *, const int *, const double *, const double *, const int *, const double *, const int *,
            const double *, double *, const int *);
void dtrmv_(const char *, const char *, const char *, const int *, const double *, const int *, double *, const int *);
void dtrsv_(const char *, const char *, const char *, const int *, const double *, const int *, double *, const int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 64

static double wsum(const double *y, int count) {
    double s = 0;
    for (int i = 0; i < count; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

/* Every loss takes (A, x, y, a, b) and the configuration: layout, uplo, trans, diag, n,
   incx, incy, fortran. */
#define PARAMS double *A, double *x, double *y, double *a, double *b, int L, int U, int T, int D, int n, int ix, int iy, int F
static double l_norms(PARAMS) {
    (void)A, (void)y, (void)a, (void)b, (void)L, (void)U, (void)T, (void)D, (void)iy;
    double r = F ? dnrm2_(&n, x, &ix) : cblas_dnrm2(n, x, ix);
    int k = (int)cblas_idamax(n, x, ix); /* an index: constant */
    return r * r * r + 0.3 * cblas_dasum(n, x, ix) + 0.01 * k;
}
static double l_swap(PARAMS) {
    (void)A, (void)a, (void)b, (void)L, (void)U, (void)T, (void)D, (void)F;
    cblas_dswap(n, x, ix, y, iy);
    return wsum(x, SZ) + 2 * wsum(y, SZ) + x[0] * y[1];
}
static double l_ger(PARAMS) {
    (void)b, (void)U, (void)T, (void)D;
    int m = n + 1, lda = (L == CblasRowMajor ? n : m) + 1;
    if (F)
        dger_(&m, &n, a, x, &ix, y, &iy, A, &lda);
    else
        cblas_dger(L, m, n, *a, x, ix, y, iy, A, lda);
    return wsum(A, SZ);
}
static double l_symv(PARAMS) {
    (void)T, (void)D;
    int lda = n + 2;
    if (F)
        dsymv_(U == CblasUpper ? "U" : "l", &n, a, A, &lda, x, &ix, b, y, &iy);
    else
        cblas_dsymv(L, U, n, *a, A, lda, x, ix, *b, y, iy);
    return wsum(y, SZ);
}
static double l_trmv(PARAMS) {
    (void)y, (void)a, (void)b, (void)iy;
    int lda = n + 1;
    if (F)
        dtrmv_(U == CblasUpper ? "u" : "L", T == CblasTrans ? "T" : "N", D == CblasUnit ? "U" : "N", &n, A, &lda, x,
               &ix);
    else
        cblas_dtrmv(L, U, T, D, n, A, lda, x, ix);
    return wsum(x, SZ);
}
static double l_trsv(PARAMS) {
    (void)y, (void)a, (void)b, (void)iy;
    int lda = n + 1;
    if (F)
        dtrsv_(U == CblasUpper ? "U" : "L", T == CblasTrans ? "t" : "n", D == CblasUnit ? "u" : "N", &n, A, &lda, x,
               &ix);
    else
        cblas_dtrsv(L, U, T, D, n, A, lda, x, ix);
    return wsum(x, SZ);
}

typedef double (*loss_fn)(PARAMS);

static double A0[SZ], x0_[SZ], y0_[SZ], a0, b0, vA[SZ], vx[SZ], vy[SZ], va, vb;
static double A[SZ], x[SZ], y[SZ], a, b, dA[SZ], dx[SZ], dy[SZ], da, db;
static int LAY, UPLO, TR, DIAG, N, INCX, INCY, FORT;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(x, x0_, sizeof x), memcpy(y, y0_, sizeof y), a = a0, b = b0;
    memset(dA, 0, sizeof dA), memset(dx, 0, sizeof dx), memset(dy, 0, sizeof dy), da = db = 0;
}

static double fd(loss_fn f, int aA, int ax, int ay, int aa, int ab) {
    double h = 1e-5, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        reset();
        for (int i = 0; i < SZ; i++)
            A[i] += aA * side * h * vA[i], x[i] += ax * side * h * vx[i], y[i] += ay * side * h * vy[i];
        a += aa * side * h * va, b += ab * side * h * vb;
        s += side * f(A, x, y, &a, &b, LAY, UPLO, TR, DIAG, N, INCX, INCY, FORT);
    }
    return s / (2 * h);
}

static double projected(int aA, int ax, int ay, int aa, int ab) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += aA * dA[i] * vA[i] + ax * dx[i] * vx[i] + ay * dy[i] * vy[i];
    return s + aa * da * va + ab * db * vb;
}

#define DUP(v) enzyme_dup, &v[0], &d##v[0]
#define CONST(v) enzyme_const, &v[0]
#define DUP1(v) enzyme_dup, &v, &d##v
#define CONST1(v) enzyme_const, &v
#define ON_DUP 1
#define ON_CONST 0
#define ARGS LAY, UPLO, TR, DIAG, N, INCX, INCY, FORT
#define REV(f, SA, SX, SY, SAL, SBE)                                                                             \
    do {                                                                                                       \
        reset();                                                                                               \
        __enzyme_autodiff((void *)f, SA(A), SX(x), SY(y), SAL##1(a), SBE##1(b), ARGS);                         \
        check(#f " reverse " #SA " " #SX " " #SY " " #SAL " " #SBE, config,                                     \
              projected(ON_##SA, ON_##SX, ON_##SY, ON_##SAL, ON_##SBE),                                        \
              fd(f, ON_##SA, ON_##SX, ON_##SY, ON_##SAL, ON_##SBE), 1e-6);                                     \
    } while (0)
#define FWD(f, SA, SX, SY, SAL, SBE)                                                                             \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dx, vx, sizeof dx), memcpy(dy, vy, sizeof dy), da = va, db = vb;      \
        double t = __enzyme_fwddiff((void *)f, SA(A), SX(x), SY(y), SAL##1(a), SBE##1(b), ARGS);                 \
        check(#f " forward " #SA " " #SX " " #SY " " #SAL " " #SBE, config, t,                                  \
              fd(f, ON_##SA, ON_##SX, ON_##SY, ON_##SAL, ON_##SBE), 1e-6);                                     \
    } while (0)

static float l_chain_s(float *A, float *x, float *y, int n) {
    float r = cblas_snrm2(n, x, 1) + cblas_sasum(n, y, 2);
    cblas_strmv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, A, n, x, 1);
    cblas_ssymv(CblasRowMajor, CblasUpper, n, 0.5f, A, n, x, 1, 1.0f, y, 2);
    cblas_sger(CblasRowMajor, n, n, 0.25f, x, 1, y, 2, A, n);
    cblas_strsv(CblasRowMajor, CblasUpper, CblasTrans, CblasNonUnit, n, A, n, x, 1);
    float s = r;
    for (int i = 0; i < n; i++)
        s += (1.0f + 0.5f * i) * x[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < SZ; i++) {
        A0[i] = 0.5 * sin(0.7 * i + 0.2) + ((i % 6 == 0) ? 2.0 : 0.0), x0_[i] = cos(0.3 * i - 0.1), y0_[i] = 0.5 - 0.05 * i;
        vA[i] = 0.3 * sin(1.3 * i), vx[i] = 0.2 * cos(0.9 * i + 1), vy[i] = 0.1 * ((i * 7) % 5) - 0.2;
    }
    for (int i = 0; i < 6; i++) /* a well-conditioned diagonal for every layout used below */
        for (int ld = 5; ld <= 7; ld++)
            A0[i * (ld + 1)] = 2.0 + 0.1 * i;
    a0 = 1.3, b0 = 0.7, va = 0.4, vb = -0.3;
    int config = 0;
    for (FORT = 0; FORT <= 1; FORT++)
        for (int c = 0; c < 4; c++, config++) {
            N = argc + 3; /* 4 */
            LAY = FORT || c % 2 ? CblasColMajor : CblasRowMajor;
            UPLO = c < 2 ? CblasUpper : CblasLower;
            TR = c == 1 || c == 2 ? CblasTrans : CblasNoTrans;
            DIAG = c == 3 ? CblasUnit : CblasNonUnit;
            INCX = c == 2 ? 2 : 1, INCY = c == 1 ? -2 : 1;
            REV(l_norms, CONST, DUP, CONST, CONST, CONST);
            FWD(l_norms, CONST, DUP, CONST, CONST, CONST);
            if (!FORT) {
                REV(l_swap, CONST, DUP, DUP, CONST, CONST);
                FWD(l_swap, CONST, DUP, DUP, CONST, CONST);
            }
            REV(l_ger, DUP, DUP, DUP, DUP, CONST);
            REV(l_ger, DUP, CONST, DUP, CONST, CONST);
            REV(l_ger, DUP, CONST, CONST, CONST, CONST);
            FWD(l_ger, DUP, DUP, DUP, DUP, CONST);
            REV(l_symv, DUP, DUP, DUP, DUP, DUP);
            REV(l_symv, CONST, DUP, DUP, CONST, DUP);
            FWD(l_symv, DUP, DUP, DUP, DUP, DUP);
            REV(l_trmv, DUP, DUP, CONST, CONST, CONST);
            REV(l_trmv, CONST, DUP, CONST, CONST, CONST);
            FWD(l_trmv, DUP, DUP, CONST, CONST, CONST);
            REV(l_trsv, DUP, DUP, CONST, CONST, CONST);
            REV(l_trsv, CONST, DUP, CONST, CONST, CONST);
            FWD(l_trsv, DUP, DUP, CONST, CONST, CONST);
        }

    /* float: snrm2, sasum, strmv, ssymv, sger, strsv in one chain, all active */
    {
        int n = argc + 3;
        /* (the solve after the update is sensitive: h = 1e-2 is too coarse, 1e-3 is within
           the tolerance in float) */
        float fA[SZ], fx[SZ], fy[SZ], fdA[SZ], fdx[SZ], fdy[SZ], want = 0, h = 1e-3f;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                fA[i] = (float)(A0[i] + side * h * vA[i]), fx[i] = (float)(x0_[i] + side * h * vx[i]),
                fy[i] = (float)(y0_[i] + side * h * vy[i]);
            want += side * l_chain_s(fA, fx, fy, n) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fx[i] = (float)x0_[i], fy[i] = (float)y0_[i], fdA[i] = fdx[i] = fdy[i] = 0;
        __enzyme_autodiff_f((void *)l_chain_s, enzyme_dup, fA, fdA, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, n);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i] + fdx[i] * vx[i] + fdy[i] * vy[i];
        check("float level-2 chain reverse", n, got, want, 3e-3);
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fx[i] = (float)x0_[i], fy[i] = (float)y0_[i], fdA[i] = (float)vA[i],
            fdx[i] = (float)vx[i], fdy[i] = (float)vy[i];
        check("float level-2 chain forward", n,
              __enzyme_fwddiff_f((void *)l_chain_s, enzyme_dup, fA, fdA, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, n),
              want, 3e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
