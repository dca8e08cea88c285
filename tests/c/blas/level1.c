/* Level-1 BLAS differentiated at the level of the call (issue 26 items 1 and 4): dot,
   axpy, scal and copy in the CBLAS spelling (double and float) and the Fortran one
   (ddot_, daxpy_, dscal_, dcopy_: all arguments by pointer), with unit, larger and
   negative increments and every activity combination of their vectors and alpha (passed
   through a pointer so that one prototype serves all). Reverse and forward mode against a
   central finite difference along a direction that is zero on the constant arguments. */
#include <stdio.h>
#include <string.h>
#include <math.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

double ddot_(const int *, const double *, const int *, const double *, const int *);
void daxpy_(const int *, const double *, const double *, const int *, double *, const int *);
void dscal_(const int *, const double *, double *, const int *);
void dcopy_(const int *, const double *, const int *, double *, const int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 40

static double wsum(const double *y) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

/* Each loss takes (x, y, a) and the sizes; `fortran` picks the spelling. A dot's square
   makes its result's adjoint differ from 1. */
static double l_dot(double *x, double *y, double *a, int n, int incx, int incy, int fortran) {
    (void)a;
    double d = fortran ? ddot_(&n, x, &incx, y, &incy) : cblas_ddot(n, x, incx, y, incy);
    return d * d;
}
static double l_axpy(double *x, double *y, double *a, int n, int incx, int incy, int fortran) {
    if (fortran)
        daxpy_(&n, a, x, &incx, y, &incy);
    else
        cblas_daxpy(n, *a, x, incx, y, incy);
    return wsum(y);
}
static double l_scal(double *x, double *y, double *a, int n, int incx, int incy, int fortran) {
    (void)incy;
    if (fortran)
        dscal_(&n, a, y, &incx);
    else
        cblas_dscal(n, *a, y, incx);
    return wsum(y) + x[0] * 0.0;
}
static double l_copy(double *x, double *y, double *a, int n, int incx, int incy, int fortran) {
    (void)a;
    if (fortran)
        dcopy_(&n, x, &incx, y, &incy);
    else
        cblas_dcopy(n, x, incx, y, incy);
    return wsum(y);
}

typedef double (*loss_fn)(double *, double *, double *, int, int, int, int);

static double x0_[SZ], y0_[SZ], a0, vx[SZ], vy[SZ], va;
static double x[SZ], y[SZ], a, dx[SZ], dy[SZ], da;
static int N, INCX, INCY, F;

static void reset(void) {
    memcpy(x, x0_, sizeof x), memcpy(y, y0_, sizeof y), a = a0;
    memset(dx, 0, sizeof dx), memset(dy, 0, sizeof dy), da = 0;
}

static double fd(loss_fn f, int ax, int ay, int aa) {
    double h = 1e-5, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        reset();
        for (int i = 0; i < SZ; i++)
            x[i] += ax * side * h * vx[i], y[i] += ay * side * h * vy[i];
        a += aa * side * h * va;
        s += side * f(x, y, &a, N, INCX, INCY, F);
    }
    return s / (2 * h);
}

static double projected(int ax, int ay, int aa) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += ax * dx[i] * vx[i] + ay * dy[i] * vy[i];
    return s + aa * da * va;
}

#define DUP(v) enzyme_dup, &v[0], &d##v[0]
#define CONST(v) enzyme_const, &v[0]
#define DUP1(v) enzyme_dup, &v, &d##v
#define CONST1(v) enzyme_const, &v
#define ON_DUP 1
#define ON_CONST 0
#define ARGS N, INCX, INCY, F
#define REV(f, SX, SY, SA)                                                                                       \
    do {                                                                                                       \
        reset();                                                                                               \
        __enzyme_autodiff((void *)f, SX(x), SY(y), SA##1(a), ARGS);                                             \
        check(#f " reverse " #SX " " #SY " " #SA, config, projected(ON_##SX, ON_##SY, ON_##SA),                  \
              fd(f, ON_##SX, ON_##SY, ON_##SA), 1e-6);                                                         \
    } while (0)
#define FWD(f, SX, SY, SA)                                                                                       \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dx, vx, sizeof dx), memcpy(dy, vy, sizeof dy), da = va;                                         \
        double t = __enzyme_fwddiff((void *)f, SX(x), SY(y), SA##1(a), ARGS);                                   \
        check(#f " forward " #SX " " #SY " " #SA, config, t, fd(f, ON_##SX, ON_##SY, ON_##SA), 1e-6);           \
    } while (0)

static float sdot_loss(float *x, float *y, int n) {
    float d = cblas_sdot(n, x, 2, y, -1);
    return d * d;
}
static float saxpy_scal_copy(float *x, float *y, float *z, float *a, int n) {
    cblas_saxpy(n, *a, x, 1, y, 2);
    cblas_sscal(n, *a, y, 2);
    cblas_scopy(n, y, 2, z, -1);
    float s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0f + 0.5f * i) * z[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    for (int i = 0; i < SZ; i++) {
        x0_[i] = sin(0.7 * i + 0.2), y0_[i] = cos(0.3 * i - 0.1);
        vx[i] = 0.3 * sin(1.3 * i), vy[i] = 0.2 * cos(0.9 * i + 1);
    }
    a0 = 1.3, va = 0.4;
    int config = 0;
    for (F = 0; F <= 1; F++)
        for (int strides = 0; strides < 3; strides++, config++) {
            N = argc + 5;
            INCX = strides == 0 ? 1 : strides == 1 ? 3 : -2;
            INCY = strides == 0 ? 1 : strides == 1 ? -2 : 3;
            REV(l_dot, DUP, DUP, CONST);
            REV(l_dot, CONST, DUP, CONST);
            FWD(l_dot, DUP, DUP, CONST);
            REV(l_axpy, DUP, DUP, DUP);
            REV(l_axpy, CONST, DUP, CONST);
            FWD(l_axpy, DUP, DUP, DUP);
            FWD(l_axpy, CONST, DUP, CONST);
            REV(l_scal, CONST, DUP, DUP);
            REV(l_scal, CONST, DUP, CONST);
            FWD(l_scal, CONST, DUP, DUP);
            REV(l_copy, DUP, DUP, CONST);
            FWD(l_copy, CONST, DUP, CONST);
        }

    /* float: sdot with a negative increment; saxpy, sscal, scopy chained */
    {
        int n = argc + 4;
        float fx[SZ], fy[SZ], fz[SZ], fdx[SZ], fdy[SZ], fdz[SZ], fa, fda, want = 0, h = 1e-2f;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                fx[i] = (float)(x0_[i] + side * h * vx[i]), fy[i] = (float)(y0_[i] + side * h * vy[i]);
            want += side * sdot_loss(fx, fy, n) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fx[i] = (float)x0_[i], fy[i] = (float)y0_[i], fdx[i] = fdy[i] = 0;
        __enzyme_autodiff_f((void *)sdot_loss, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, n);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdx[i] * vx[i] + fdy[i] * vy[i];
        check("cblas_sdot reverse", n, got, want, 2e-3);
        for (int i = 0; i < SZ; i++)
            fdx[i] = (float)vx[i], fdy[i] = (float)vy[i];
        check("cblas_sdot forward", n, __enzyme_fwddiff_f((void *)sdot_loss, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, n),
              want, 2e-3);

        want = 0;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                fx[i] = (float)(x0_[i] + side * h * vx[i]), fy[i] = (float)(y0_[i] + side * h * vy[i]), fz[i] = 0;
            fa = (float)(a0 + side * h * va);
            want += side * saxpy_scal_copy(fx, fy, fz, &fa, n) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fx[i] = (float)x0_[i], fy[i] = (float)y0_[i], fz[i] = 0, fdx[i] = fdy[i] = fdz[i] = 0;
        fa = (float)a0, fda = 0;
        __enzyme_autodiff_f((void *)saxpy_scal_copy, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, enzyme_dup, fz, fdz,
                            enzyme_dup, &fa, &fda, n);
        got = fda * va;
        for (int i = 0; i < SZ; i++)
            got += fdx[i] * vx[i] + fdy[i] * vy[i];
        check("saxpy, sscal, scopy reverse", n, got, want, 2e-3);
        for (int i = 0; i < SZ; i++)
            fx[i] = (float)x0_[i], fy[i] = (float)y0_[i], fz[i] = 0, fdx[i] = (float)vx[i], fdy[i] = (float)vy[i],
            fdz[i] = 0;
        fa = (float)a0, fda = (float)va;
        check("saxpy, sscal, scopy forward", n,
              __enzyme_fwddiff_f((void *)saxpy_scal_copy, enzyme_dup, fx, fdx, enzyme_dup, fy, fdy, enzyme_dup, fz,
                                 fdz, enzyme_dup, &fa, &fda, n),
              want, 2e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
