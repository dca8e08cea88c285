/* cblas_dgemv / cblas_sgemv / dgemv_ differentiated at the level of the call (issue 26
   items 1 and 4): y = alpha op(A) x + beta y with every activity combination (A, x dup or
   const; alpha, beta active or const, through pointers), row- and column-major, with and
   without transpose, a rectangular A with a padded leading dimension, and strided x and y
   (a negative increment too). Reverse and forward mode against a central finite
   difference of sum(w .* y) along a direction that is zero on the constant arguments. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dgemv_(const char *, const int *, const int *, const double *, const double *, const int *, const double *,
            const int *, const double *, double *, const int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 64

/* sum(w .* y) over the whole buffer y (elements between the strides stay as they were) */
static double wsum(const double *y) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

static double loss(const double *A, const double *x, double *y, const double *alpha, const double *beta, int layout,
                   int trans, int m, int n, int lda, int incx, int incy) {
    cblas_dgemv(layout, trans, m, n, *alpha, A, lda, x, incx, *beta, y, incy);
    return wsum(y);
}

static double loss_f(const double *A, const double *x, double *y, const double *alpha, const double *beta,
                     const char *trans, int m, int n, int lda, int incx, int incy) {
    dgemv_(trans, &m, &n, alpha, A, &lda, x, &incx, beta, y, &incy);
    return wsum(y);
}

static float loss_s(const float *A, const float *x, float *y, const float *alpha, const float *beta, int layout,
                    int trans, int m, int n, int lda, int incx, int incy) {
    cblas_sgemv(layout, trans, m, n, *alpha, A, lda, x, incx, *beta, y, incy);
    float s = 0;
    for (int i = 0; i < SZ; i++)
        s += (0.5f + 0.125f * i) * y[i];
    return s;
}

static double A0[SZ], xinit[SZ], yinit[SZ], al0, be0, vA[SZ], vx[SZ], vy[SZ], val, vbe;
static double A[SZ], x[SZ], y[SZ], al, be, dA[SZ], dx[SZ], dy[SZ], dal, dbe;
static int L, TR, M, N, LDA, INCX, INCY;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(x, xinit, sizeof x), memcpy(y, yinit, sizeof y), al = al0, be = be0;
    memset(dA, 0, sizeof dA), memset(dx, 0, sizeof dx), memset(dy, 0, sizeof dy), dal = dbe = 0;
}

static double moved(double t, int aA, int ax, int aal, int abe, int fortran) {
    reset();
    for (int i = 0; i < SZ; i++)
        A[i] += aA * t * vA[i], x[i] += ax * t * vx[i], y[i] += t * vy[i];
    al += aal * t * val, be += abe * t * vbe;
    return fortran ? loss_f(A, x, y, &al, &be, TR == CblasTrans ? "T" : "N", M, N, LDA, INCX, INCY)
                   : loss(A, x, y, &al, &be, L, TR, M, N, LDA, INCX, INCY);
}

static double fd(int aA, int ax, int aal, int abe, int fortran) {
    double h = 1e-5;
    return (moved(h, aA, ax, aal, abe, fortran) - moved(-h, aA, ax, aal, abe, fortran)) / (2 * h);
}

static double projected(int aA, int ax, int aal, int abe) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += aA * dA[i] * vA[i] + ax * dx[i] * vx[i] + dy[i] * vy[i];
    return s + aal * dal * val + abe * dbe * vbe;
}

#define DUP(v) enzyme_dup, &v[0], &d##v[0]
#define CONST(v) enzyme_const, &v[0]
#define DUP1(v) enzyme_dup, &v, &d##v
#define CONST1(v) enzyme_const, &v
#define ON_DUP 1
#define ON_CONST 0
#define ARGS L, TR, M, N, LDA, INCX, INCY
#define REV(SA, SX, SAL, SBE)                                                                                    \
    do {                                                                                                       \
        reset();                                                                                               \
        __enzyme_autodiff((void *)loss, SA(A), SX(x), DUP(y), SAL##1(al), SBE##1(be), ARGS);                    \
        check("reverse " #SA " " #SX " " #SAL " " #SBE, config, projected(ON_##SA, ON_##SX, ON_##SAL, ON_##SBE), \
              fd(ON_##SA, ON_##SX, ON_##SAL, ON_##SBE, 0), 1e-6);                                              \
    } while (0)
#define FWD(SA, SX, SAL, SBE)                                                                                    \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dx, vx, sizeof dx), memcpy(dy, vy, sizeof dy), dal = val, dbe = vbe;  \
        double t = __enzyme_fwddiff((void *)loss, SA(A), SX(x), DUP(y), SAL##1(al), SBE##1(be), ARGS);           \
        check("forward " #SA " " #SX " " #SAL " " #SBE, config, t, fd(ON_##SA, ON_##SX, ON_##SAL, ON_##SBE, 0),  \
              1e-6);                                                                                           \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < SZ; i++) {
        A0[i] = sin(0.7 * i + 0.2), xinit[i] = cos(0.3 * i - 0.1), yinit[i] = 0.5 - 0.05 * i;
        vA[i] = 0.3 * sin(1.3 * i), vx[i] = 0.2 * cos(0.9 * i + 1), vy[i] = 0.1 * ((i * 7) % 5) - 0.2;
    }
    al0 = 1.3, be0 = 0.7, val = 0.4, vbe = -0.3;
    int config = 0;
    for (L = CblasRowMajor; L <= CblasColMajor; L++)
        for (TR = CblasNoTrans; TR <= CblasTrans; TR++)
            for (int strided = 0; strided <= 1; strided++, config++) {
                M = argc + 2, N = argc + 4; /* 3 x 5 */
                LDA = (L == CblasRowMajor ? N : M) + 2;
                INCX = strided ? 2 : 1, INCY = strided ? -3 : 1;
                REV(DUP, DUP, DUP, DUP);
                REV(DUP, DUP, CONST, CONST);
                REV(DUP, CONST, DUP, CONST);
                REV(DUP, CONST, CONST, DUP);
                REV(CONST, DUP, DUP, DUP);
                REV(CONST, DUP, CONST, CONST);
                REV(CONST, CONST, DUP, CONST);
                REV(CONST, CONST, CONST, DUP);
                REV(CONST, CONST, CONST, CONST);
                FWD(DUP, DUP, DUP, DUP);
                FWD(DUP, CONST, CONST, DUP);
                FWD(CONST, DUP, DUP, CONST);
                FWD(CONST, CONST, CONST, CONST);
                if (L == CblasColMajor) {
                    const char *tr = TR == CblasTrans ? "T" : "N";
                    reset();
                    __enzyme_autodiff((void *)loss_f, DUP(A), DUP(x), DUP(y), DUP1(al), DUP1(be), enzyme_const, tr,
                                      M, N, LDA, INCX, INCY);
                    check("dgemv_ reverse all active", config, projected(1, 1, 1, 1), fd(1, 1, 1, 1, 1), 1e-6);
                    reset();
                    memcpy(dA, vA, sizeof dA), memcpy(dx, vx, sizeof dx), memcpy(dy, vy, sizeof dy), dal = val,
                        dbe = vbe;
                    double t = __enzyme_fwddiff((void *)loss_f, DUP(A), DUP(x), DUP(y), DUP1(al), DUP1(be),
                                                enzyme_const, tr, M, N, LDA, INCX, INCY);
                    check("dgemv_ forward all active", config, t, fd(1, 1, 1, 1, 1), 1e-6);
                }
            }

    /* float, transposed, row-major, all active, against a float central difference */
    {
        float fA[SZ], fx[SZ], fy[SZ], fdA[SZ], fdx[SZ], fdy[SZ], fal, fbe, fdal, fdbe, want = 0, h = 1e-2f;
        int m = argc + 3, n = argc + 2;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                fA[i] = (float)(A0[i] + side * h * vA[i]), fx[i] = (float)(xinit[i] + side * h * vx[i]),
                fy[i] = (float)(yinit[i] + side * h * vy[i]);
            fal = (float)(al0 + side * h * val), fbe = (float)(be0 + side * h * vbe);
            want += side * loss_s(fA, fx, fy, &fal, &fbe, CblasRowMajor, CblasTrans, m, n, n, 1, 2) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fx[i] = (float)xinit[i], fy[i] = (float)yinit[i], fdA[i] = fdx[i] = fdy[i] = 0;
        fal = (float)al0, fbe = (float)be0, fdal = fdbe = 0;
        __enzyme_autodiff_f((void *)loss_s, enzyme_dup, fA, fdA, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, enzyme_dup,
                            &fal, &fdal, enzyme_dup, &fbe, &fdbe, CblasRowMajor, CblasTrans, m, n, n, 1, 2);
        double got = fdal * val + fdbe * vbe;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i] + fdx[i] * vx[i] + fdy[i] * vy[i];
        check("cblas_sgemv reverse all active", 0, got, want, 2e-3);
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fx[i] = (float)xinit[i], fy[i] = (float)yinit[i], fdA[i] = (float)vA[i],
            fdx[i] = (float)vx[i], fdy[i] = (float)vy[i];
        fal = (float)al0, fbe = (float)be0, fdal = (float)val, fdbe = (float)vbe;
        float t = __enzyme_fwddiff_f((void *)loss_s, enzyme_dup, fA, fdA, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy,
                                     enzyme_dup, &fal, &fdal, enzyme_dup, &fbe, &fdbe, CblasRowMajor, CblasTrans, m, n,
                                     n, 1, 2);
        check("cblas_sgemv forward all active", 0, t, want, 2e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
