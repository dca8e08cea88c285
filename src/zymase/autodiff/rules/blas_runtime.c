/* Derivative code of BLAS calls, called by the code autodiff/rules/blas.py generates.

   zymase differentiates a BLAS call at the level of the call (as Enzyme does): the
   derivative of C = alpha op(A) op(B) + beta C is itself a few BLAS calls (dA += alpha dC
   op(B)^T, ...), so it runs at BLAS speed. This file holds that code, written once for
   double (prefix d) and once for float (prefix s): frontends/c.py compiles it with clang,
   links it into every module whose derivatives call it and makes it internal.

   Every function takes the routine's arguments in CBLAS order and spelling (the rule turns
   a Fortran call's pointers and characters into these values), then one shadow per
   vector/matrix argument (NULL when that argument is constant). Per routine:
     <p><name>_save(which, args...)   a malloc'd copy of argument `which` (its whole span, so
                                      that the copy is read with the same increments and
                                      leading dimension): the input as it was at the call,
                                      for a reverse sweep that runs after it is overwritten
     <p><name>_fwd(args..., shadows..., scalar tangents...)
                                      forward mode, called BEFORE the primal call: the output
                                      shadows become the output tangents; returns the
                                      tangent of a scalar result (dot)
     <p><name>_dscalar(which, args..., shadows..., dres)
                                      reverse mode: the adjoint of scalar argument `which`
                                      (alpha, beta), read before _rev changes the shadows
     <p><name>_rev(args..., shadows..., dres)
                                      reverse mode: the adjoints of the vector/matrix inputs
                                      accumulated, the output's shadow turned into the
                                      adjoint of what the call read of it
     <p><name>_fwd_lanes(args..., lanes, d), <p><name>_rev_lanes(args..., info, lanes, d)
                                      LAPACK at width N: every lane at once, d[a * lanes + k]
                                      the shadow of array a in lane k (lapack_runtime.h)
   Enumerations are CBLAS's: layout 101 row-major / 102 column-major, transpose 111 no /
   112 yes (113, conjugate, is 112 for real data), triangle 121 upper / 122 lower,
   diagonal 131 non-unit / 132 unit. */
#ifndef ZY_T
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The entry points stay out of line: each derivative calls them, and inlining their loops
   into every call site would only make the optimizer's work grow (the time is in BLAS). */
#define ZY_API __attribute__((noinline))

/* with ZYMASE_TAPE_STATS=1 the derivative module defines this counter (transforms/
   lower_tape.py): the copies made here count as taped bytes */
extern long __zymase_tape_bytes __attribute__((weak));

static void *zy_copy_span(const void *p, long elements, size_t size) {
    size_t bytes = (size_t)(elements > 0 ? elements : 0) * size;
    void *copy = malloc(bytes ? bytes : 1);
    if (bytes)
        memcpy(copy, p, bytes);
    if (&__zymase_tape_bytes)
        __zymase_tape_bytes += (long)bytes;
    return copy;
}

/* elements spanned by a vector of n elements with increment inc */
static long zy_vspan(int n, int inc) { return n > 0 ? (long)(n - 1) * (inc < 0 ? -inc : inc) + 1 : 0; }
/* elements spanned by a rows x cols matrix stored with leading dimension ld */
static long zy_mspan(int layout, int rows, int cols, int ld) {
    if (rows <= 0 || cols <= 0)
        return 0;
    return layout == 101 ? (long)(rows - 1) * ld + cols : (long)(cols - 1) * ld + rows;
}
/* whether spans of a and b elements of the given size starting at pa and pb overlap */
static int zy_overlap(const void *pa, long a, const void *pb, long b, size_t size) {
    const char *x = pa, *y = pb;
    return a > 0 && b > 0 && x < y + b * size && y < x + a * size;
}
/* whether vectors x and y of n elements (increments incx, incy) share an element without
   being the same vector: BLAS forbids an output overlapping an input, and what such a call
   computes depends on the order of the BLAS kernel's loop, which no rule can know */
static int zy_partly_shared(const void *x, int incx, const void *y, int incy, int n, size_t size) {
    if (!x || !y || n <= 0 || (x == y && incx == incy))
        return 0;
    long sx = incx < 0 ? -(long)incx : incx, sy = incy < 0 ? -(long)incy : incy;
    long bytes = (long)((const char *)y - (const char *)x);
    if (sx == 0 || sy == 0 || bytes % (long)size)
        return zy_overlap(x, zy_vspan(n, incx), y, zy_vspan(n, incy), size);
    long d = bytes / (long)size; /* y's first element is element d of x's memory */
    for (long i = 0; i < n; i++) {
        long r = i * sx - d;
        if (r >= 0 && r % sy == 0 && r / sy < n)
            return 1;
    }
    return 0;
}
static void zy_refuse_overlap(int shared, const char *routine) {
    if (!shared)
        return;
    fprintf(stderr,
            "zymase: error: the BLAS call %s was given input and output vectors that partly overlap, which "
            "BLAS does not allow (the result depends on the order of the BLAS kernel's loop), so it has no "
            "derivative; hint: pass separate arrays, or the same array with the same increment\n",
            routine);
    abort();
}
#define ZY_OVERLAP(routine, x, incx, y, incy, n)                                                                  \
    zy_refuse_overlap(zy_partly_shared(x, incx, y, incy, n, sizeof(ZY_T)), ZY_STRING(ZY_B(routine)))

/* offset of element i of a vector of n elements with increment inc (BLAS: a negative
   increment walks the memory backwards from the last element) */
static long zy_at(int n, int inc, int i) { return inc >= 0 ? (long)i * inc : (long)(n - 1 - i) * -inc; }
/* offset of element (i, j) of a matrix */
static long zy_ij(int layout, int ld, int i, int j) { return layout == 101 ? (long)i * ld + j : i + (long)j * ld; }

/* whether element (i, j) of op(A), A triangular, is a stored element of A: not outside
   the triangle, not on a unit diagonal (implicit ones, constants) */
static int zy_tri_stored(int uplo, int trans, int diag, int i, int j) {
    int r = trans != 111 ? j : i, c = trans != 111 ? i : j; /* (i, j) of op(A) is (r, c) of A */
    if (r == c)
        return diag != 132;
    return uplo == 121 ? c > r : c < r;
}

/* leading dimension of a packed rows x cols temporary */
static int zy_ld(int layout, int rows, int cols) { int ld = layout == 101 ? cols : rows; return ld > 0 ? ld : 1; }

/* whether (i, j) is in the stored triangle of a symmetric n x n matrix */
static int zy_in_triangle(int uplo, int i, int j) { return uplo == 121 ? j >= i : j <= i; }

/* A LAPACK call that refused an argument (info < 0) reported it through xerbla and did
   nothing: the derivative code, which computes with its own copies and workspace, would
   give a plausible derivative of a call that did not happen. The program stops there
   (reference LAPACK's xerbla stops it too). A numerical failure (info > 0: singular, not
   positive definite, no convergence) gives NaN derivatives instead, in each rule. */
static void zy_lapack_status(int info, const char *routine) {
    if (info >= 0)
        return;
    fprintf(stderr,
            "zymase: error: the LAPACK call %s refused its argument %d (info = %d) and did nothing, so it has "
            "no derivative; hint: fix that argument (LAPACK printed which one above)\n",
            routine, -info, info);
    abort();
}
#define ZY_STRING(x) ZY_STRING_OF(x)
#define ZY_STRING_OF(x) #x
/* <p><name>_status(info): called right after each differentiated LAPACK call */
#define ZY_STATUS(name)                                                                                            \
    ZY_API void ZY_P(name##_status)(int info) { zy_lapack_status(info, ZY_STRING(ZY_F(name))); }

#define ZY_T double
#define ZY_P(name) __zymase_blas_d##name
#define ZY_B(name) cblas_d##name
#define ZY_F(name) d##name##_
#include "blas_runtime.c"
#undef ZY_T
#undef ZY_P
#undef ZY_B
#undef ZY_F
#define ZY_T float
#define ZY_P(name) __zymase_blas_s##name
#define ZY_B(name) cblas_s##name
#define ZY_F(name) s##name##_
#include "blas_runtime.c"

#else /* the routines for one precision */

ZY_T ZY_B(dot)(int n, const ZY_T *x, int incx, const ZY_T *y, int incy);
void ZY_B(axpy)(int n, ZY_T a, const ZY_T *x, int incx, ZY_T *y, int incy);
void ZY_B(gemv)(int layout, int trans, int m, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x,
                int incx, ZY_T beta, ZY_T *y, int incy);
void ZY_B(ger)(int layout, int m, int n, ZY_T alpha, const ZY_T *x, int incx, const ZY_T *y, int incy,
               ZY_T *A, int lda);
void ZY_B(gemm)(int layout, int ta, int tb, int m, int n, int k, ZY_T alpha, const ZY_T *A, int lda,
                const ZY_T *B, int ldb, ZY_T beta, ZY_T *C, int ldc);
ZY_T ZY_B(nrm2)(int n, const ZY_T *x, int incx);
void ZY_B(swap)(int n, ZY_T *x, int incx, ZY_T *y, int incy);
void ZY_B(symv)(int layout, int uplo, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x, int incx, ZY_T beta,
                ZY_T *y, int incy);
void ZY_B(syr2)(int layout, int uplo, int n, ZY_T alpha, const ZY_T *x, int incx, const ZY_T *y, int incy, ZY_T *A,
                int lda);
void ZY_B(trmv)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, ZY_T *x, int incx);
void ZY_B(trsv)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, ZY_T *x, int incx);
void ZY_B(symm)(int layout, int side, int uplo, int m, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *B,
                int ldb, ZY_T beta, ZY_T *C, int ldc);
void ZY_B(syrk)(int layout, int uplo, int trans, int n, int k, ZY_T alpha, const ZY_T *A, int lda, ZY_T beta, ZY_T *C,
                int ldc);
void ZY_B(syr2k)(int layout, int uplo, int trans, int n, int k, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *B,
                 int ldb, ZY_T beta, ZY_T *C, int ldc);
void ZY_B(trmm)(int layout, int side, int uplo, int trans, int diag, int m, int n, ZY_T alpha, const ZY_T *A, int lda,
                ZY_T *B, int ldb);
void ZY_B(trsm)(int layout, int side, int uplo, int trans, int diag, int m, int n, ZY_T alpha, const ZY_T *A, int lda,
                ZY_T *B, int ldb);
void ZY_F(potrf)(const char *uplo, const int *n, ZY_T *A, const int *lda, int *info);
void ZY_F(potrs)(const char *uplo, const int *n, const int *nrhs, const ZY_T *A, const int *lda, ZY_T *B, const int *ldb,
                 int *info);
void ZY_F(getrf)(const int *m, const int *n, ZY_T *A, const int *lda, int *ipiv, int *info);
void ZY_F(getrs)(const char *trans, const int *n, const int *nrhs, const ZY_T *A, const int *lda, const int *ipiv,
                 ZY_T *B, const int *ldb, int *info);
void ZY_F(laswp)(const int *n, ZY_T *A, const int *lda, const int *k1, const int *k2, const int *ipiv, const int *incx);
void ZY_F(syev)(const char *jobz, const char *uplo, const int *n, ZY_T *A, const int *lda, ZY_T *w, ZY_T *work,
                const int *lwork, int *info);
void ZY_F(syevd)(const char *jobz, const char *uplo, const int *n, ZY_T *A, const int *lda, ZY_T *w, ZY_T *work,
                 const int *lwork, int *iwork, const int *liwork, int *info);
void ZY_F(gesdd)(const char *jobz, const int *m, const int *n, ZY_T *A, const int *lda, ZY_T *s, ZY_T *U, const int *ldu,
                 ZY_T *VT, const int *ldvt, ZY_T *work, const int *lwork, int *iwork, int *info);

/* x = a x over a vector; exact zeros when a == 0 (BLAS's scal may keep NaNs) */
static void ZY_P(vscale)(int n, ZY_T a, ZY_T *x, int inc) {
    for (int i = 0; i < n; i++) {
        ZY_T *p = x + zy_at(n, inc, i);
        *p = a == 0 ? 0 : a * *p;
    }
}

/* C = a C over a rows x cols matrix, exact zeros when a == 0 */
static void ZY_P(mscale)(int layout, int rows, int cols, ZY_T a, ZY_T *C, int ld) {
    if (a == 1)
        return;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            ZY_T *p = C + zy_ij(layout, ld, i, j);
            *p = a == 0 ? 0 : a * *p;
        }
}

/* sum of X .* Y over a rows x cols matrix */
static ZY_T ZY_P(mdot)(int layout, int rows, int cols, const ZY_T *X, int ldx, const ZY_T *Y, int ldy) {
    ZY_T s = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            s += X[zy_ij(layout, ldx, i, j)] * Y[zy_ij(layout, ldy, i, j)];
    return s;
}

/* Y += a X over a rows x cols matrix */
static void ZY_P(maxpy)(int layout, int rows, int cols, ZY_T a, const ZY_T *X, int ldx, ZY_T *Y, int ldy) {
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            Y[zy_ij(layout, ldy, i, j)] += a * X[zy_ij(layout, ldx, i, j)];
}

/* ---- dot: r = x . y --------------------------------------------------------------- */
ZY_API void *ZY_P(dot_save)(int which, int n, const ZY_T *x, int incx, const ZY_T *y, int incy) {
    return which == 1 ? zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T))
                      : zy_copy_span(y, zy_vspan(n, incy), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(dot_fwd)(int n, const ZY_T *x, int incx, const ZY_T *y, int incy, const ZY_T *dx, const ZY_T *dy) {
    ZY_T t = 0;
    if (dx)
        t += ZY_B(dot)(n, dx, incx, y, incy);
    if (dy)
        t += ZY_B(dot)(n, x, incx, dy, incy);
    return t;
}

ZY_API void ZY_P(dot_rev)(int n, const ZY_T *x, int incx, const ZY_T *y, int incy, ZY_T *dx, ZY_T *dy, ZY_T dr) {
    if (dx)
        ZY_B(axpy)(n, dr, y, incy, dx, incx);
    if (dy)
        ZY_B(axpy)(n, dr, x, incx, dy, incy);
}

/* ---- axpy: y += a x --------------------------------------------------------------- */
ZY_API void *ZY_P(axpy_save)(int which, int n, ZY_T a, const ZY_T *x, int incx, const ZY_T *y, int incy) {
    (void)a;
    return which == 2 ? zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T))
                      : zy_copy_span(y, zy_vspan(n, incy), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(axpy_fwd)(int n, ZY_T a, const ZY_T *x, int incx, const ZY_T *y, int incy, const ZY_T *dx, ZY_T *dy,
                    ZY_T da) {
    ZY_OVERLAP(axpy, x, incx, y, incy, n);
    if (dx)
        ZY_B(axpy)(n, a, dx, incx, dy, incy);
    if (da != 0)
        ZY_B(axpy)(n, da, x, incx, dy, incy);
    return 0;
}

ZY_API ZY_T ZY_P(axpy_dscalar)(int which, int n, ZY_T a, const ZY_T *x, int incx, const ZY_T *y, int incy,
                        const ZY_T *dx, const ZY_T *dy, ZY_T dr) {
    (void)which, (void)a, (void)y, (void)dx, (void)dr;
    return ZY_B(dot)(n, x, incx, dy, incy); /* da = x . dy */
}

ZY_API void ZY_P(axpy_rev)(int n, ZY_T a, const ZY_T *x, int incx, const ZY_T *y, int incy, ZY_T *dx, ZY_T *dy,
                    ZY_T dr) {
    (void)x, (void)y, (void)dr;
    ZY_OVERLAP(axpy, dx, incx, dy, incy, n); /* (x may be the copy taken at the call: its shadow says where it was) */
    if (dx)
        ZY_B(axpy)(n, a, dy, incy, dx, incx); /* dy itself is unchanged: y += ... keeps y */
}

/* ---- scal: x = a x (BLAS does nothing when incx <= 0) ------------------------------ */
ZY_API void *ZY_P(scal_save)(int which, int n, ZY_T a, const ZY_T *x, int incx) {
    (void)which, (void)a;
    return zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(scal_fwd)(int n, ZY_T a, const ZY_T *x, int incx, ZY_T *dx, ZY_T da) {
    if (incx <= 0)
        return 0;
    ZY_P(vscale)(n, a, dx, incx);
    if (da != 0)
        ZY_B(axpy)(n, da, x, incx, dx, incx);
    return 0;
}

ZY_API ZY_T ZY_P(scal_dscalar)(int which, int n, ZY_T a, const ZY_T *x, int incx, const ZY_T *dx, ZY_T dr) {
    (void)which, (void)a, (void)dr;
    if (incx <= 0)
        return 0;
    return ZY_B(dot)(n, x, incx, dx, incx); /* da = x_old . dx */
}

ZY_API void ZY_P(scal_rev)(int n, ZY_T a, const ZY_T *x, int incx, ZY_T *dx, ZY_T dr) {
    (void)x, (void)dr;
    if (incx > 0)
        ZY_P(vscale)(n, a, dx, incx);
}

/* ---- copy: y = x ------------------------------------------------------------------ */
ZY_API void *ZY_P(copy_save)(int which, int n, const ZY_T *x, int incx, const ZY_T *y, int incy) {
    return which == 1 ? zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T))
                      : zy_copy_span(y, zy_vspan(n, incy), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(copy_fwd)(int n, const ZY_T *x, int incx, ZY_T *y, int incy, const ZY_T *dx, ZY_T *dy) {
    ZY_OVERLAP(copy, x, incx, y, incy, n);
    for (int i = 0; i < n; i++)
        dy[zy_at(n, incy, i)] = dx ? dx[zy_at(n, incx, i)] : 0;
    return 0;
}

ZY_API void ZY_P(copy_rev)(int n, const ZY_T *x, int incx, ZY_T *y, int incy, ZY_T *dx, ZY_T *dy, ZY_T dr) {
    (void)x, (void)y, (void)dr;
    ZY_OVERLAP(copy, dx, incx, dy, incy, n);
    if (dx && zy_overlap(dx, zy_vspan(n, incx), dy, zy_vspan(n, incy), sizeof(ZY_T))) {
        /* x and y share memory (cblas_dcopy(n, x, 1, x, 1)): dy is read whole before it is
           zeroed, or the zeroing would take back what was just added to dx */
        ZY_T *t = malloc((n > 0 ? n : 1) * sizeof(ZY_T));
        for (int i = 0; i < n; i++)
            t[i] = dy[zy_at(n, incy, i)];
        ZY_P(vscale)(n, 0, dy, incy);
        for (int i = 0; i < n; i++)
            dx[zy_at(n, incx, i)] += t[i];
        free(t);
        return;
    }
    if (dx)
        ZY_B(axpy)(n, 1, dy, incy, dx, incx);
    ZY_P(vscale)(n, 0, dy, incy);
}

/* ---- gemv: y = alpha op(A) x + beta y, A is m x n --------------------------------- */
ZY_API void *ZY_P(gemv_save)(int which, int layout, int trans, int m, int n, ZY_T alpha, const ZY_T *A, int lda,
                      const ZY_T *x, int incx, ZY_T beta, const ZY_T *y, int incy) {
    (void)alpha, (void)beta;
    int t = trans != 111;
    if (which == 5)
        return zy_copy_span(A, zy_mspan(layout, m, n, lda), sizeof(ZY_T));
    if (which == 7)
        return zy_copy_span(x, zy_vspan(t ? m : n, incx), sizeof(ZY_T));
    return zy_copy_span(y, zy_vspan(t ? n : m, incy), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(gemv_fwd)(int layout, int trans, int m, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x,
                    int incx, ZY_T beta, const ZY_T *y, int incy, const ZY_T *dA, const ZY_T *dx, ZY_T *dy,
                    ZY_T dalpha, ZY_T dbeta) {
    int leny = trans != 111 ? n : m;
    ZY_P(vscale)(leny, beta, dy, incy);
    if (dbeta != 0)
        ZY_B(axpy)(leny, dbeta, y, incy, dy, incy);
    if (dA)
        ZY_B(gemv)(layout, trans, m, n, alpha, dA, lda, x, incx, 1, dy, incy);
    if (dx)
        ZY_B(gemv)(layout, trans, m, n, alpha, A, lda, dx, incx, 1, dy, incy);
    if (dalpha != 0)
        ZY_B(gemv)(layout, trans, m, n, dalpha, A, lda, x, incx, 1, dy, incy);
    return 0;
}

ZY_API ZY_T ZY_P(gemv_dscalar)(int which, int layout, int trans, int m, int n, ZY_T alpha, const ZY_T *A, int lda,
                        const ZY_T *x, int incx, ZY_T beta, const ZY_T *y, int incy, const ZY_T *dA,
                        const ZY_T *dx, const ZY_T *dy, ZY_T dr) {
    (void)alpha, (void)beta, (void)dA, (void)dx, (void)dr;
    int leny = trans != 111 ? n : m;
    if (which == 9)
        return ZY_B(dot)(leny, y, incy, dy, incy); /* dbeta = y_old . dy */
    /* dalpha = dy . op(A) x */
    ZY_T *t = malloc((size_t)(leny > 0 ? leny : 1) * sizeof(ZY_T));
    ZY_B(gemv)(layout, trans, m, n, 1, A, lda, x, incx, 0, t, 1);
    ZY_T s = 0;
    for (int i = 0; i < leny; i++)
        s += t[i] * dy[zy_at(leny, incy, i)];
    free(t);
    return s;
}

ZY_API void ZY_P(gemv_rev)(int layout, int trans, int m, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x,
                    int incx, ZY_T beta, const ZY_T *y, int incy, ZY_T *dA, ZY_T *dx, ZY_T *dy, ZY_T dr) {
    (void)y, (void)dr;
    int t = trans != 111;
    if (dA) {
        /* y = A x: dA += alpha dy x^T;  y = A^T x: dA += alpha x dy^T */
        if (t)
            ZY_B(ger)(layout, m, n, alpha, x, incx, dy, incy, dA, lda);
        else
            ZY_B(ger)(layout, m, n, alpha, dy, incy, x, incx, dA, lda);
    }
    if (dx)
        ZY_B(gemv)(layout, t ? 111 : 112, m, n, alpha, A, lda, dy, incy, 1, dx, incx);
    ZY_P(vscale)(t ? n : m, beta, dy, incy);
}

/* ---- gemm: C = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n ---------------- */
ZY_API void *ZY_P(gemm_save)(int which, int layout, int ta, int tb, int m, int n, int k, ZY_T alpha, const ZY_T *A,
                      int lda, const ZY_T *B, int ldb, ZY_T beta, const ZY_T *C, int ldc) {
    (void)alpha, (void)beta;
    if (which == 7)
        return ta != 111 ? zy_copy_span(A, zy_mspan(layout, k, m, lda), sizeof(ZY_T))
                         : zy_copy_span(A, zy_mspan(layout, m, k, lda), sizeof(ZY_T));
    if (which == 9)
        return tb != 111 ? zy_copy_span(B, zy_mspan(layout, n, k, ldb), sizeof(ZY_T))
                         : zy_copy_span(B, zy_mspan(layout, k, n, ldb), sizeof(ZY_T));
    return zy_copy_span(C, zy_mspan(layout, m, n, ldc), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(gemm_fwd)(int layout, int ta, int tb, int m, int n, int k, ZY_T alpha, const ZY_T *A, int lda,
                    const ZY_T *B, int ldb, ZY_T beta, const ZY_T *C, int ldc, const ZY_T *dA, const ZY_T *dB,
                    ZY_T *dC, ZY_T dalpha, ZY_T dbeta) {
    ZY_P(mscale)(layout, m, n, beta, dC, ldc);
    if (dbeta != 0)
        ZY_P(maxpy)(layout, m, n, dbeta, C, ldc, dC, ldc);
    if (dA)
        ZY_B(gemm)(layout, ta, tb, m, n, k, alpha, dA, lda, B, ldb, 1, dC, ldc);
    if (dB)
        ZY_B(gemm)(layout, ta, tb, m, n, k, alpha, A, lda, dB, ldb, 1, dC, ldc);
    if (dalpha != 0)
        ZY_B(gemm)(layout, ta, tb, m, n, k, dalpha, A, lda, B, ldb, 1, dC, ldc);
    return 0;
}

ZY_API ZY_T ZY_P(gemm_dscalar)(int which, int layout, int ta, int tb, int m, int n, int k, ZY_T alpha, const ZY_T *A,
                        int lda, const ZY_T *B, int ldb, ZY_T beta, const ZY_T *C, int ldc, const ZY_T *dA,
                        const ZY_T *dB, const ZY_T *dC, ZY_T dr) {
    (void)alpha, (void)beta, (void)dA, (void)dB, (void)dr;
    if (which == 11)
        return ZY_P(mdot)(layout, m, n, C, ldc, dC, ldc); /* dbeta = C_old . dC */
    /* dalpha = dC . op(A) op(B) */
    int ldt = layout == 101 ? n : m;
    ZY_T *t = malloc((size_t)(m > 0 && n > 0 ? (long)m * n : 1) * sizeof(ZY_T));
    ZY_B(gemm)(layout, ta, tb, m, n, k, 1, A, lda, B, ldb, 0, t, ldt > 0 ? ldt : 1);
    ZY_T s = ZY_P(mdot)(layout, m, n, t, ldt, dC, ldc);
    free(t);
    return s;
}

ZY_API void ZY_P(gemm_rev)(int layout, int ta, int tb, int m, int n, int k, ZY_T alpha, const ZY_T *A, int lda,
                    const ZY_T *B, int ldb, ZY_T beta, const ZY_T *C, int ldc, ZY_T *dA, ZY_T *dB, ZY_T *dC,
                    ZY_T dr) {
    (void)C, (void)dr;
    int tA = ta != 111, tB = tb != 111;
    if (dA) {
        if (!tA) /* dA (m x k) += alpha dC op(B)^T */
            ZY_B(gemm)(layout, 111, tB ? 111 : 112, m, k, n, alpha, dC, ldc, B, ldb, 1, dA, lda);
        else /* dA (k x m) += alpha op(B) dC^T */
            ZY_B(gemm)(layout, tB ? 112 : 111, 112, k, m, n, alpha, B, ldb, dC, ldc, 1, dA, lda);
    }
    if (dB) {
        if (!tB) /* dB (k x n) += alpha op(A)^T dC */
            ZY_B(gemm)(layout, tA ? 111 : 112, 111, k, n, m, alpha, A, lda, dC, ldc, 1, dB, ldb);
        else /* dB (n x k) += alpha dC^T op(A) */
            ZY_B(gemm)(layout, 112, tA ? 112 : 111, n, k, m, alpha, dC, ldc, A, lda, 1, dB, ldb);
    }
    ZY_P(mscale)(layout, m, n, beta, dC, ldc);
}

/* ---- nrm2: r = |x| (0 when n < 1 or incx < 1, as BLAS); at x = 0 the derivative is 0 */
ZY_API void *ZY_P(nrm2_save)(int which, int n, const ZY_T *x, int incx) {
    (void)which;
    return zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(nrm2_fwd)(int n, const ZY_T *x, int incx, const ZY_T *dx) {
    if (n < 1 || incx < 1)
        return 0;
    ZY_T r = ZY_B(nrm2)(n, x, incx);
    return r == 0 ? 0 : ZY_B(dot)(n, x, incx, dx, incx) / r;
}

ZY_API void ZY_P(nrm2_rev)(int n, const ZY_T *x, int incx, ZY_T *dx, ZY_T dr) {
    if (n < 1 || incx < 1)
        return;
    ZY_T r = ZY_B(nrm2)(n, x, incx);
    if (r != 0)
        ZY_B(axpy)(n, dr / r, x, incx, dx, incx);
}

/* ---- asum: r = sum |x_i| (0 when n < 1 or incx < 1); sign(0) taken as 0 ----------- */
ZY_API void *ZY_P(asum_save)(int which, int n, const ZY_T *x, int incx) {
    (void)which;
    return zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(asum_fwd)(int n, const ZY_T *x, int incx, const ZY_T *dx) {
    ZY_T t = 0;
    for (int i = 0; incx > 0 && i < n; i++) {
        ZY_T v = x[(long)i * incx];
        t += ((v > 0) - (v < 0)) * dx[(long)i * incx];
    }
    return t;
}

ZY_API void ZY_P(asum_rev)(int n, const ZY_T *x, int incx, ZY_T *dx, ZY_T dr) {
    for (int i = 0; incx > 0 && i < n; i++) {
        ZY_T v = x[(long)i * incx];
        dx[(long)i * incx] += ((v > 0) - (v < 0)) * dr;
    }
}

/* ---- swap: x <-> y ---------------------------------------------------------------- */
ZY_API void *ZY_P(swap_save)(int which, int n, const ZY_T *x, int incx, const ZY_T *y, int incy) {
    return which == 1 ? zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T))
                      : zy_copy_span(y, zy_vspan(n, incy), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(swap_fwd)(int n, const ZY_T *x, int incx, const ZY_T *y, int incy, ZY_T *dx, ZY_T *dy) {
    ZY_OVERLAP(swap, x, incx, y, incy, n);
    ZY_B(swap)(n, dx, incx, dy, incy);
    return 0;
}

ZY_API void ZY_P(swap_rev)(int n, const ZY_T *x, int incx, const ZY_T *y, int incy, ZY_T *dx, ZY_T *dy, ZY_T dr) {
    (void)x, (void)y, (void)dr;
    ZY_OVERLAP(swap, dx, incx, dy, incy, n);
    ZY_B(swap)(n, dx, incx, dy, incy);
}

/* ---- ger: A += alpha x y^T, A is m x n -------------------------------------------- */
ZY_API void *ZY_P(ger_save)(int which, int layout, int m, int n, ZY_T alpha, const ZY_T *x, int incx, const ZY_T *y,
                     int incy, const ZY_T *A, int lda) {
    (void)alpha;
    if (which == 4)
        return zy_copy_span(x, zy_vspan(m, incx), sizeof(ZY_T));
    if (which == 6)
        return zy_copy_span(y, zy_vspan(n, incy), sizeof(ZY_T));
    return zy_copy_span(A, zy_mspan(layout, m, n, lda), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(ger_fwd)(int layout, int m, int n, ZY_T alpha, const ZY_T *x, int incx, const ZY_T *y, int incy,
                   const ZY_T *A, int lda, const ZY_T *dx, const ZY_T *dy, ZY_T *dA, ZY_T dalpha) {
    (void)A;
    if (dx)
        ZY_B(ger)(layout, m, n, alpha, dx, incx, y, incy, dA, lda);
    if (dy)
        ZY_B(ger)(layout, m, n, alpha, x, incx, dy, incy, dA, lda);
    if (dalpha != 0)
        ZY_B(ger)(layout, m, n, dalpha, x, incx, y, incy, dA, lda);
    return 0;
}

ZY_API ZY_T ZY_P(ger_dscalar)(int which, int layout, int m, int n, ZY_T alpha, const ZY_T *x, int incx, const ZY_T *y,
                       int incy, const ZY_T *A, int lda, const ZY_T *dx, const ZY_T *dy, const ZY_T *dA, ZY_T dr) {
    (void)which, (void)alpha, (void)A, (void)dx, (void)dy, (void)dr;
    /* dalpha = x . (dA y) */
    ZY_T *t = malloc((size_t)(m > 0 ? m : 1) * sizeof(ZY_T));
    ZY_B(gemv)(layout, 111, m, n, 1, dA, lda, y, incy, 0, t, 1);
    ZY_T s = 0;
    for (int i = 0; i < m; i++)
        s += t[i] * x[zy_at(m, incx, i)];
    free(t);
    return s;
}

ZY_API void ZY_P(ger_rev)(int layout, int m, int n, ZY_T alpha, const ZY_T *x, int incx, const ZY_T *y, int incy,
                   const ZY_T *A, int lda, ZY_T *dx, ZY_T *dy, ZY_T *dA, ZY_T dr) {
    (void)A, (void)dr;
    if (dx)
        ZY_B(gemv)(layout, 111, m, n, alpha, dA, lda, y, incy, 1, dx, incx);
    if (dy)
        ZY_B(gemv)(layout, 112, m, n, alpha, dA, lda, x, incx, 1, dy, incy);
}

/* ---- symv: y = alpha A x + beta y, A symmetric n x n, one triangle stored ---------- */
ZY_API void *ZY_P(symv_save)(int which, int layout, int uplo, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x,
                      int incx, ZY_T beta, const ZY_T *y, int incy) {
    (void)uplo, (void)alpha, (void)beta;
    if (which == 4)
        return zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T));
    if (which == 6)
        return zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T));
    return zy_copy_span(y, zy_vspan(n, incy), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(symv_fwd)(int layout, int uplo, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x, int incx,
                    ZY_T beta, const ZY_T *y, int incy, const ZY_T *dA, const ZY_T *dx, ZY_T *dy, ZY_T dalpha,
                    ZY_T dbeta) {
    ZY_P(vscale)(n, beta, dy, incy);
    if (dbeta != 0)
        ZY_B(axpy)(n, dbeta, y, incy, dy, incy);
    if (dA)
        ZY_B(symv)(layout, uplo, n, alpha, dA, lda, x, incx, 1, dy, incy);
    if (dx)
        ZY_B(symv)(layout, uplo, n, alpha, A, lda, dx, incx, 1, dy, incy);
    if (dalpha != 0)
        ZY_B(symv)(layout, uplo, n, dalpha, A, lda, x, incx, 1, dy, incy);
    return 0;
}

ZY_API ZY_T ZY_P(symv_dscalar)(int which, int layout, int uplo, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x,
                        int incx, ZY_T beta, const ZY_T *y, int incy, const ZY_T *dA, const ZY_T *dx, const ZY_T *dy,
                        ZY_T dr) {
    (void)alpha, (void)beta, (void)dA, (void)dx, (void)dr;
    if (which == 8)
        return ZY_B(dot)(n, y, incy, dy, incy);
    ZY_T *t = malloc((size_t)(n > 0 ? n : 1) * sizeof(ZY_T));
    ZY_B(symv)(layout, uplo, n, 1, A, lda, x, incx, 0, t, 1);
    ZY_T s = 0;
    for (int i = 0; i < n; i++)
        s += t[i] * dy[zy_at(n, incy, i)];
    free(t);
    return s;
}

ZY_API void ZY_P(symv_rev)(int layout, int uplo, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *x, int incx,
                    ZY_T beta, const ZY_T *y, int incy, ZY_T *dA, ZY_T *dx, ZY_T *dy, ZY_T dr) {
    (void)y, (void)dr;
    if (dA) {
        /* the full matrix's adjoint alpha dy x^T, folded onto the stored triangle:
           off the diagonal alpha (dy_i x_j + x_i dy_j), on it alpha dy_i x_i */
        ZY_B(syr2)(layout, uplo, n, alpha, dy, incy, x, incx, dA, lda);
        for (int i = 0; i < n; i++)
            dA[zy_ij(layout, lda, i, i)] -= alpha * dy[zy_at(n, incy, i)] * x[zy_at(n, incx, i)];
    }
    if (dx)
        ZY_B(symv)(layout, uplo, n, alpha, A, lda, dy, incy, 1, dx, incx);
    ZY_P(vscale)(n, beta, dy, incy);
}

/* ---- triangular matrices: element (i, j) of op(A) as the call sees it ---------------- */

/* y += op(T) x where T is the stored triangle of A (a unit diagonal counts as 0: the
   tangent of a constant) */
static void ZY_P(tri_mv_add)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda,
                             const ZY_T *x, int incx, ZY_T *y, int incy) {
    for (int i = 0; i < n; i++) {
        ZY_T s = 0;
        for (int j = 0; j < n; j++)
            if (zy_tri_stored(uplo, trans, diag, i, j))
                s += A[trans != 111 ? zy_ij(layout, lda, j, i) : zy_ij(layout, lda, i, j)] * x[zy_at(n, incx, j)];
        y[zy_at(n, incy, i)] += s;
    }
}

/* dA += the outer product u v^T of op(A)'s adjoint, on the stored triangle */
static void ZY_P(tri_outer_add)(int layout, int uplo, int trans, int diag, int n, ZY_T a, const ZY_T *u, int incu,
                                const ZY_T *v, int incv, ZY_T *dA, int lda) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (zy_tri_stored(uplo, trans, diag, i, j))
                dA[trans != 111 ? zy_ij(layout, lda, j, i) : zy_ij(layout, lda, i, j)] +=
                    a * u[zy_at(n, incu, i)] * v[zy_at(n, incv, j)];
}

/* ---- trmv: x = op(A) x, A triangular n x n ---------------------------------------- */
ZY_API void *ZY_P(trmv_save)(int which, int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, const ZY_T *x,
                      int incx) {
    (void)uplo, (void)trans, (void)diag;
    if (which == 5)
        return zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T));
    return zy_copy_span(x, zy_vspan(n, incx), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(trmv_fwd)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, const ZY_T *x, int incx,
                    const ZY_T *dA, ZY_T *dx) {
    ZY_T *t = calloc((size_t)(n > 0 ? n : 1), sizeof(ZY_T));
    if (dA)
        ZY_P(tri_mv_add)(layout, uplo, trans, diag, n, dA, lda, x, incx, t, 1);
    ZY_B(trmv)(layout, uplo, trans, diag, n, A, lda, dx, incx);
    for (int i = 0; i < n; i++)
        dx[zy_at(n, incx, i)] += t[i];
    free(t);
    return 0;
}

ZY_API void ZY_P(trmv_rev)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, const ZY_T *x, int incx,
                    ZY_T *dA, ZY_T *dx, ZY_T dr) {
    (void)dr;
    if (dA) /* d op(A) = dx_new x_old^T */
        ZY_P(tri_outer_add)(layout, uplo, trans, diag, n, 1, dx, incx, x, incx, dA, lda);
    ZY_B(trmv)(layout, uplo, trans != 111 ? 111 : 112, diag, n, A, lda, dx, incx);
}

/* ---- trsv: x = op(A)^-1 x --------------------------------------------------------- */
ZY_API void *ZY_P(trsv_save)(int which, int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, const ZY_T *x,
                      int incx) {
    return ZY_P(trmv_save)(which, layout, uplo, trans, diag, n, A, lda, x, incx);
}

ZY_API ZY_T ZY_P(trsv_fwd)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, const ZY_T *x, int incx,
                    const ZY_T *dA, ZY_T *dx) {
    /* op(A) x_new = b: dx_new = op(A)^-1 (db - op(dA) x_new) */
    if (dA) {
        ZY_T *xn = malloc((size_t)(n > 0 ? n : 1) * sizeof(ZY_T)), *t = calloc((size_t)(n > 0 ? n : 1), sizeof(ZY_T));
        for (int i = 0; i < n; i++)
            xn[i] = x[zy_at(n, incx, i)];
        ZY_B(trsv)(layout, uplo, trans, diag, n, A, lda, xn, 1);
        ZY_P(tri_mv_add)(layout, uplo, trans, diag, n, dA, lda, xn, 1, t, 1);
        for (int i = 0; i < n; i++)
            dx[zy_at(n, incx, i)] -= t[i];
        free(xn), free(t);
    }
    ZY_B(trsv)(layout, uplo, trans, diag, n, A, lda, dx, incx);
    return 0;
}

ZY_API void ZY_P(trsv_rev)(int layout, int uplo, int trans, int diag, int n, const ZY_T *A, int lda, const ZY_T *x, int incx,
                    ZY_T *dA, ZY_T *dx, ZY_T dr) {
    (void)dr;
    /* db = op(A)^-T dx_new; d op(A) = -db x_new^T, x_new solved again from the saved b */
    ZY_B(trsv)(layout, uplo, trans != 111 ? 111 : 112, diag, n, A, lda, dx, incx);
    if (dA) {
        ZY_T *xn = malloc((size_t)(n > 0 ? n : 1) * sizeof(ZY_T));
        for (int i = 0; i < n; i++)
            xn[i] = x[zy_at(n, incx, i)];
        ZY_B(trsv)(layout, uplo, trans, diag, n, A, lda, xn, 1);
        ZY_P(tri_outer_add)(layout, uplo, trans, diag, n, -1, dx, incx, xn, 1, dA, lda);
        free(xn);
    }
}

/* level 3 (symm, syrk, trmm, trsm) and LAPACK (Cholesky, LU, eigendecomposition, SVD, least squares), in files of their own */
#include "blas_runtime_level3.h"
#include "lapack_runtime.h"
#include "lapack_lu.h"
#include "lapack_eigen.h"
#include "lapack_svd.h"
#include "lapack_lstsq.h"
ZY_STATUS(potrf)
ZY_STATUS(potrs)
ZY_STATUS(getrf)
ZY_STATUS(getrs)
ZY_STATUS(gesv)
ZY_STATUS(syev)
ZY_STATUS(syevd)
ZY_STATUS(gesdd)
ZY_STATUS(gelsd)

#endif
