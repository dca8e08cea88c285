/* Derivative code of Numba's BLAS/LAPACK helpers, called by the code
   autodiff/rules/numba_linalg.py generates for NumPy linear algebra in njit functions.

   Numba's helpers (numba_xxgemm, numba_xxgemv, numba_xxnrm2, numba_xgesv here; Cholesky, the
   LU, eigen, SVD and least-squares ones in numba_lapack_runtime.h; QR's pair in
   numba_qr_runtime.h) take their
   operands Fortran-style: column-major, transposes and triangles as letters, dimensions
   as Py_ssize_t, alpha/beta through pointers. The functions here take the same operands
   (without the element-kind letter: one copy per precision, prefix d or s; alpha/beta by
   value), then, for factorizations and solves, the call's status, then one shadow per
   array operand (NULL when constant). They compute with the BLAS/LAPACK routines SciPy
   exports to Cython, the ones Numba's helpers call; numba_linalg.register_scipy_symbols
   publishes them as __zymase_scipy_<p><routine> (32-bit integers, as Numba checks).
     <p><helper>_save(which, operands...)   a malloc'd copy of operand `which` (its span)
     <p><helper>_fwd(operands..., [status,] shadows...)
                   gemm/gemv: before the primal call (the inputs' tangents give the
                   output's); nrm2/potrf/gesv: after it (the tangent needs the norm,
                   factor or solution)
     <p><helper>_rev(operands..., [status,] shadows...)
                   at the mirror point; operands the reverse needs as they were at the call
                   are the _save copies; the output's shadow becomes the adjoint of what the
                   call read of that memory.
   A factorization or solve that failed (status != 0: not positive definite, singular) has
   no derivative: its tangents and adjoints are NaN, never a silent number. */
#ifndef ZN_T
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* out of line: the time is in BLAS, and every derivative calls these */
#define ZN_API __attribute__((noinline))

/* No tape-byte counter here (blas_runtime.c's is a weak symbol): MCJIT resolves a
   module's extern_weak reference wrongly, sending calls of Numba's runtime to null. */
static void *zn_copy(const void *p, long bytes) {
    if (bytes < 0)
        bytes = 0;
    void *copy = malloc(bytes ? (size_t)bytes : 1);
    if (bytes)
        memcpy(copy, p, (size_t)bytes);
    return copy;
}

/* elements spanned by a rows x cols column-major matrix with leading dimension ld */
static long zn_span(long rows, long cols, long ld) { return rows > 0 && cols > 0 ? (cols - 1) * ld + rows : 0; }
/* whether n1 elements from p1 and n2 from p2 (of `size` bytes each) share memory */
static int zn_overlap(const void *p1, long n1, const void *p2, long n2, size_t size) {
    const char *a = p1, *b = p2;
    return a < b + (size_t)n2 * size && b < a + (size_t)n1 * size;
}
static int zn_trans(char c) { return c == 't' || c == 'T' || c == 'c' || c == 'C'; }
static int zn_upper(char uplo) { return uplo == 'U' || uplo == 'u'; }

/* blas_runtime.c's helpers that the C path's LAPACK rules use (numba_lapack_runtime.h
   includes those rules): the same meaning, column-major only, no tape-byte counter */
static void *zy_copy_span(const void *p, long elements, size_t size) {
    return zn_copy(p, (elements > 0 ? elements : 0) * (long)size);
}
static long zy_mspan(int layout, int rows, int cols, int ld) { return (void)layout, zn_span(rows, cols, ld); }
static int zy_in_triangle(int uplo, int i, int j) { return uplo == 121 ? j >= i : j <= i; }
/* CBLAS's transpose and triangle enumerations as letters and back */
static char zn_op(int trans) { return trans == 111 ? 'N' : 'T'; }
static int zn_uplo(char uplo) { return zn_upper(uplo) ? 121 : 122; }

#define ZN_T double
#define ZN_P(name) __zymase_nblas_d##name
#define ZN_F(name) __zymase_scipy_d##name
#include "numba_linalg_runtime.c"
#undef ZN_T
#undef ZN_P
#undef ZN_F
#define ZN_T float
#define ZN_P(name) __zymase_nblas_s##name
#define ZN_F(name) __zymase_scipy_s##name
#include "numba_linalg_runtime.c"

#else /* one precision: ZN_T, ZN_P, ZN_F */

void ZN_F(gemm)(const char *ta, const char *tb, const int *m, const int *n, const int *k, const ZN_T *alpha,
                const ZN_T *A, const int *lda, const ZN_T *B, const int *ldb, const ZN_T *beta, ZN_T *C,
                const int *ldc);
void ZN_F(gemv)(const char *t, const int *m, const int *n, const ZN_T *alpha, const ZN_T *A, const int *lda,
                const ZN_T *x, const int *incx, const ZN_T *beta, ZN_T *y, const int *incy);
void ZN_F(trsm)(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
                const ZN_T *alpha, const ZN_T *A, const int *lda, ZN_T *B, const int *ldb);
void ZN_F(trmm)(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
                const ZN_T *alpha, const ZN_T *A, const int *lda, ZN_T *B, const int *ldb);
void ZN_F(getrs)(const char *t, const int *n, const int *nrhs, const ZN_T *A, const int *lda, const int *ipiv,
                 ZN_T *B, const int *ldb, int *info);

/* C (m x n) = alpha op(A) op(B) + beta C; beta == 0 overwrites C (NaN-safe, as BLAS) */
static void ZN_P(mm)(char ta, char tb, long m, long n, long k, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *B,
                     long ldb, ZN_T beta, ZN_T *C, long ldc) {
    if (m <= 0 || n <= 0)
        return;
    int im = (int)m, in = (int)n, ik = (int)k, ilda = lda > 1 ? (int)lda : 1, ildb = ldb > 1 ? (int)ldb : 1,
        ildc = (int)ldc;
    if (k <= 0) {
        for (long j = 0; j < n; j++)
            for (long i = 0; i < m; i++)
                C[i + j * ldc] = beta == 0 ? 0 : beta * C[i + j * ldc];
        return;
    }
    ZN_F(gemm)(&ta, &tb, &im, &in, &ik, &alpha, A, &ilda, B, &ildb, &beta, C, &ildc);
}

/* y = alpha op(A) x + beta y (A m x n, unit increments) */
static void ZN_P(mv)(char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *x, ZN_T beta, ZN_T *y) {
    long leny = zn_trans(t) ? n : m, lenx = zn_trans(t) ? m : n;
    if (leny <= 0)
        return;
    if (lenx <= 0) {
        for (long i = 0; i < leny; i++)
            y[i] = beta == 0 ? 0 : beta * y[i];
        return;
    }
    int im = (int)m, in = (int)n, ilda = (int)lda, one = 1;
    ZN_F(gemv)(&t, &im, &in, &alpha, A, &ilda, x, &one, &beta, y, &one);
}

static void ZN_P(scale)(long rows, long cols, ZN_T beta, ZN_T *C, long ldc) {
    if (beta == 1)
        return;
    for (long j = 0; j < cols; j++)
        for (long i = 0; i < rows; i++)
            C[i + j * ldc] = beta == 0 ? 0 : beta * C[i + j * ldc];
}

static void ZN_P(fill_nan)(long rows, long cols, ZN_T *C, long ldc) {
    if (!C)
        return;
    for (long j = 0; j < cols; j++)
        for (long i = 0; i < rows; i++)
            C[i + j * ldc] = (ZN_T)NAN;
}

static ZN_T *ZN_P(temp)(long rows, long cols) {
    long count = rows * cols;
    return calloc(count > 0 ? (size_t)count : 1, sizeof(ZN_T));
}

/* ---- gemm: C = alpha op(A) op(B) + beta C ----------------------------------------------
   tangent: dC = beta dC + alpha (op(dA) op(B) + op(A) op(dB));
   adjoint: dA += alpha dC op(B)^T (transposed when A is), dB += alpha op(A)^T dC (likewise),
   then dC *= beta. */
ZN_API void *ZN_P(xxgemm_save)(int which, char ta, char tb, long m, long n, long k, ZN_T alpha, const ZN_T *A,
                               long lda, const ZN_T *B, long ldb, ZN_T beta, const ZN_T *C, long ldc) {
    (void)alpha, (void)beta, (void)C, (void)ldc;
    if (which == 7) /* A: m x k, stored k x m when transposed */
        return zn_copy(A, zn_span(zn_trans(ta) ? k : m, zn_trans(ta) ? m : k, lda) * (long)sizeof(ZN_T));
    return zn_copy(B, zn_span(zn_trans(tb) ? n : k, zn_trans(tb) ? k : n, ldb) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(xxgemm_fwd)(char ta, char tb, long m, long n, long k, ZN_T alpha, const ZN_T *A, long lda,
                             const ZN_T *B, long ldb, ZN_T beta, const ZN_T *C, long ldc, ZN_T *dA, ZN_T *dB,
                             ZN_T *dC) {
    (void)C;
    if (!dC)
        return;
    ZN_T first = beta;
    if (dA) {
        ZN_P(mm)(ta, tb, m, n, k, alpha, dA, lda, B, ldb, first, dC, ldc);
        first = 1;
    }
    if (dB) {
        ZN_P(mm)(ta, tb, m, n, k, alpha, A, lda, dB, ldb, first, dC, ldc);
        first = 1;
    }
    if (!dA && !dB)
        ZN_P(scale)(m, n, beta, dC, ldc);
}

ZN_API void ZN_P(xxgemm_rev)(char ta, char tb, long m, long n, long k, ZN_T alpha, const ZN_T *A, long lda,
                             const ZN_T *B, long ldb, ZN_T beta, const ZN_T *C, long ldc, ZN_T *dA, ZN_T *dB,
                             ZN_T *dC) {
    (void)C;
    if (!dC)
        return;
    int tA = zn_trans(ta), tB = zn_trans(tb);
    if (dA) {
        if (!tA) /* dA (m x k) += alpha dC op(B)^T */
            ZN_P(mm)('N', tB ? 'N' : 'T', m, k, n, alpha, dC, ldc, B, ldb, 1, dA, lda);
        else /* dA (k x m) += alpha op(B) dC^T */
            ZN_P(mm)(tB ? 'T' : 'N', 'T', k, m, n, alpha, B, ldb, dC, ldc, 1, dA, lda);
    }
    if (dB) {
        if (!tB) /* dB (k x n) += alpha op(A)^T dC */
            ZN_P(mm)(tA ? 'N' : 'T', 'N', k, n, m, alpha, A, lda, dC, ldc, 1, dB, ldb);
        else /* dB (n x k) += alpha dC^T op(A) */
            ZN_P(mm)('T', tA ? 'T' : 'N', n, k, m, alpha, dC, ldc, A, lda, 1, dB, ldb);
    }
    ZN_P(scale)(m, n, beta, dC, ldc);
}

/* ---- gemv: y = alpha op(A) x + beta y --------------------------------------------------
   adjoint: dA += alpha dy x^T (x dy^T when transposed), dx += alpha op(A)^T dy, dy *= beta */
ZN_API void *ZN_P(xxgemv_save)(int which, char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *x,
                               ZN_T beta, const ZN_T *y) {
    (void)alpha, (void)beta, (void)y;
    if (which == 5) /* A */
        return zn_copy(A, zn_span(m, n, lda) * (long)sizeof(ZN_T));
    return zn_copy(x, (zn_trans(t) ? m : n) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(xxgemv_fwd)(char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *x, ZN_T beta,
                             const ZN_T *y, ZN_T *dA, ZN_T *dx, ZN_T *dy) {
    (void)y;
    if (!dy)
        return;
    ZN_T first = beta;
    if (dA) {
        ZN_P(mv)(t, m, n, alpha, dA, lda, x, first, dy);
        first = 1;
    }
    if (dx) {
        ZN_P(mv)(t, m, n, alpha, A, lda, dx, first, dy);
        first = 1;
    }
    if (!dA && !dx)
        ZN_P(scale)(zn_trans(t) ? n : m, 1, beta, dy, 1);
}

ZN_API void ZN_P(xxgemv_rev)(char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *x, ZN_T beta,
                             const ZN_T *y, ZN_T *dA, ZN_T *dx, ZN_T *dy) {
    (void)y;
    if (!dy)
        return;
    int tr = zn_trans(t);
    if (dA) /* rank one: (m x 1) (1 x n) */
        ZN_P(mm)('N', 'T', m, n, 1, alpha, tr ? x : dy, m, tr ? dy : x, n, 1, dA, lda);
    if (dx)
        ZN_P(mv)(tr ? 'N' : 'T', m, n, alpha, A, lda, dy, 1, dx);
    ZN_P(scale)(tr ? n : m, 1, beta, dy, 1);
}

/* d = s c (fresh: d's old values are not read) or d += s c, for n entries of c `step`
   apart */
static void ZN_P(put_column)(ZN_T *d, ZN_T s, const ZN_T *c, long step, long n, int fresh) {
    if (step == 1 && fresh)
        for (long i = 0; i < n; i++)
            d[i] = s * c[i];
    else if (step == 1)
        for (long i = 0; i < n; i++)
            d[i] += s * c[i];
    else if (fresh)
        for (long i = 0; i < n; i++)
            d[i] = s * c[i * step];
    else
        for (long i = 0; i < n; i++)
            d[i] += s * c[i * step];
}

/* dy[k] = first dy[k] + alpha op(A) dx[k] for every lane k, from the nonzeros of dx[k]
   only: the unit directions that vector mode and Laplacian mode seed an input with make
   the lanes' tangents mostly zeros, where a gemm would multiply 64 columns of zeros for
   every one. Zero entries of dx contribute nothing, as strong zeros say
   (autodiff/semantics.py). Each nonzero adds a column of op(A) into its lane's output,
   written in place and in order: no packed copies (a product into one leny x lanes
   buffer, filled row by row, stored 65 lanes leny apart and took twice the time). With
   first = 0 the lane's first nonzero stores its column rather than zeroing the lane and
   adding (one pass over the lane instead of three, for a unit seed). */
/* Rows of op(A) per tile of the strided unit-lane product below: 32 rows of every lane's
   column (32 x lanes reads of one d-long row block, L1-resident) before the next tile. */
#define ZN_UNIT_TILE 32

/* The lanes of mv_lanes_sparse when op(A) = A^T (a C-order matrix times a vector, the
   way Numba calls gemv for `W @ x`) and each lane has at most one nonzero (unit seeds):
   lane k's column of op(A) is a row-strided column of A, so the lanes are filled a tile
   of output rows at a time, every lane's column within it, and each cache line of A is
   read once per tile instead of once per lane (about 2.5x faster at d = 64 and 256-1024
   rows, measured in C; the same at d = 16, where A stays in L1). Returns 0 (nothing
   done) when some lane has two nonzeros or there are too many lanes for the stack. */
static int ZN_P(mv_unit_lanes_strided)(long leny, long lenx, long lanes, ZN_T alpha, const ZN_T *A, long lda,
                                      ZN_T first, ZN_T **dx, ZN_T **dy) {
    if (lanes > 256)
        return 0;
    long col[256];
    ZN_T s[256];
    for (long k = 0; k < lanes; k++) {
        col[k] = -1;
        for (long j = 0; j < lenx; j++) {
            if (dx[k][j] == 0)
                continue;
            if (col[k] >= 0)
                return 0;
            col[k] = j;
            s[k] = alpha * dx[k][j];
        }
    }
    for (long i0 = 0; i0 < leny; i0 += ZN_UNIT_TILE) {
        long i1 = i0 + ZN_UNIT_TILE < leny ? i0 + ZN_UNIT_TILE : leny;
        for (long k = 0; k < lanes; k++) {
            ZN_T *d = dy[k];
            if (col[k] < 0) { /* no nonzero: the lane's product is zero */
                if (first != 1)
                    for (long i = i0; i < i1; i++)
                        d[i] = first == 0 ? 0 : first * d[i];
                continue;
            }
            const ZN_T *c = A + col[k];
            ZN_T sk = s[k];
            if (first == 0) {
                /* 8 rows gathered, then stored as one vector (the stores were the cost) */
                long i = i0;
                for (; i + 8 <= i1; i += 8) {
                    ZN_T v[8];
                    for (int r = 0; r < 8; r++)
                        v[r] = sk * c[(i + r) * lda];
                    for (int r = 0; r < 8; r++)
                        d[i + r] = v[r];
                }
                for (; i < i1; i++)
                    d[i] = sk * c[i * lda];
            }
            else if (first == 1)
                for (long i = i0; i < i1; i++)
                    d[i] += sk * c[i * lda];
            else
                for (long i = i0; i < i1; i++)
                    d[i] = first * d[i] + sk * c[i * lda];
        }
    }
    return 1;
}

static void ZN_P(mv_lanes_sparse)(char t, long leny, long lenx, long lanes, ZN_T alpha, const ZN_T *A, long lda,
                                  ZN_T first, ZN_T **dx, ZN_T **dy) {
    int tr = zn_trans(t);
    if (tr && lda > 1 && ZN_P(mv_unit_lanes_strided)(leny, lenx, lanes, alpha, A, lda, first, dx, dy))
        return;
    for (long k = 0; k < lanes; k++) {
        ZN_T *d = dy[k];
        const ZN_T *v = dx[k];
        int fresh = first == 0;
        if (!fresh && first != 1)
            for (long i = 0; i < leny; i++)
                d[i] *= first;
        for (long j = 0; j < lenx; j++) {
            if (v[j] == 0)
                continue;
            /* column j of op(A): for A, column j of A (contiguous); for A^T, row j of A */
            ZN_P(put_column)(d, alpha * v[j], tr ? A + j : A + j * lda, tr ? lda : 1, leny, fresh);
            fresh = 0;
        }
        if (fresh) /* no nonzeros: the lane's product is zero */
            memset(d, 0, (size_t)leny * sizeof(ZN_T));
    }
}

/* The distance in elements between consecutive lanes when the lanes are evenly spaced at
   least len elements apart (the columns of one matrix with that leading dimension), else
   0. One lane is a matrix of one column. */
static long ZN_P(lane_step)(ZN_T **lane, long lanes, long len) {
    if (lanes < 1 || !lane[0])
        return 0;
    if (lanes == 1)
        return len > 1 ? len : 1;
    ptrdiff_t bytes = (const char *)lane[1] - (const char *)lane[0];
    if (bytes <= 0 || bytes % (ptrdiff_t)sizeof(ZN_T) || bytes / (ptrdiff_t)sizeof(ZN_T) < len)
        return 0;
    long step = (long)(bytes / (ptrdiff_t)sizeof(ZN_T));
    for (long k = 2; k < lanes; k++)
        if (lane[k] != lane[0] + k * step)
            return 0;
    return step;
}

/* gemv in vector forward mode (and Laplacian mode, whose last lane is linear here): the
   tangents of `lanes` lanes at once. dA, dx, dy are arrays of the lanes' shadows, NULL
   for an operand without shadows. The lanes' x tangents are packed as the columns of
   one matrix, so that op(A) times all of them is one gemm (BLAS-3), not one gemv per
   lane; the packing copies are O((m + n) lanes) against the gemm's O(m n lanes). A
   tangent of A stays a gemv per lane (dA_k x: each lane has its own matrix). When at
   most one entry in 16 of the packed tangents is nonzero (an input seeded with unit
   directions), the product skips the zeros (mv_lanes_sparse): the first layer of a
   network costs what its primal gemv costs, not d times that. */
static int ZN_P(fwd_lanes)(char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *x,
                           ZN_T beta, ZN_T *value, long lanes, ZN_T **dA, ZN_T **dx, ZN_T **dy) {
    if (!dy || lanes <= 0)
        return 0;
    int folded = 0;
    long leny = zn_trans(t) ? n : m, lenx = zn_trans(t) ? m : n;
    ZN_T first = beta; /* what the lane's old dy is scaled by, once */
    if (dA) {
        for (long k = 0; k < lanes; k++)
            ZN_P(mv)(t, m, n, alpha, dA[k], lda, x, beta, dy[k]);
        first = 1;
    }
    int dense = dx && leny > 0;
    if (dense) {
        /* counted until the tangents are known not to be mostly zeros */
        long nnz = 0, most = lenx * lanes / 16;
        for (long k = 0; k < lanes && nnz <= most; k++)
            for (long i = 0; i < lenx; i++)
                nnz += dx[k][i] != 0;
        if (nnz <= most) {
            /* mostly zeros (unit seeds): op(A) times the nonzeros, into each lane */
            ZN_P(mv_lanes_sparse)(t, leny, lenx, lanes, alpha, A, lda, first, dx, dy);
            first = 1;
            dense = 0;
        }
    }
    long stepx = ZN_P(lane_step)(dx, lanes, lenx), stepy = ZN_P(lane_step)(dy, lanes, leny);
    if (dense && stepx && stepy && !zn_overlap(dx[0], lanes * stepx, dy[0], lanes * stepy, sizeof(ZN_T))) {
        /* the lanes are the columns of matrices already (lane blocks, autodiff/lane_blocks.py):
           one gemm from them into them, no packed copies. With `value`, the blocks' spare
           slots (one lane's room after the last lane) hold x and the primal y as one more
           column: the primal product rides on the gemm, which reads op(A) once for both,
           instead of a gemv reading it again (first == beta here: no dA) */
        long cols = lanes;
        ZN_T *xs = dx[0] + lanes * stepx, *ys = dy[0] + lanes * stepy;
        if (value && !zn_overlap(dx[0], (lanes + 1) * stepx, dy[0], (lanes + 1) * stepy, sizeof(ZN_T))) {
            if (lenx > 0)
                memcpy(xs, x, (size_t)lenx * sizeof(ZN_T));
            if (beta != 0)
                memcpy(ys, value, (size_t)leny * sizeof(ZN_T));
            cols = lanes + 1;
            folded = 1;
        }
        ZN_P(mm)(t, 'N', leny, cols, lenx, alpha, A, lda, dx[0], stepx, first, dy[0], stepy);
        if (folded)
            memcpy(value, ys, (size_t)leny * sizeof(ZN_T));
        first = 1;
        dense = 0;
    }
    if (dense) {
        ZN_T *X = malloc((size_t)(lenx > 0 ? lenx : 1) * (size_t)lanes * sizeof(ZN_T));
        ZN_T *Y = malloc((size_t)leny * (size_t)lanes * sizeof(ZN_T));
        for (long k = 0; k < lanes; k++)
            if (lenx > 0)
                memcpy(X + k * lenx, dx[k], (size_t)lenx * sizeof(ZN_T));
        /* Y (leny x lanes) = alpha op(A) X; A is m x n column-major */
        ZN_P(mm)(t, 'N', leny, lanes, lenx, alpha, A, lda, X, lenx > 0 ? lenx : 1, 0, Y, leny);
        for (long k = 0; k < lanes; k++) {
            ZN_T *d = dy[k];
            const ZN_T *col = Y + k * leny;
            if (first == 0)
                for (long i = 0; i < leny; i++)
                    d[i] = col[i];
            else if (first == 1)
                for (long i = 0; i < leny; i++)
                    d[i] += col[i];
            else
                for (long i = 0; i < leny; i++)
                    d[i] = col[i] + first * d[i];
        }
        free(X);
        free(Y);
        first = 1;
    }
    if (!dA && !dx)
        for (long k = 0; k < lanes; k++)
            ZN_P(scale)(leny, 1, beta, dy[k], 1);
    return folded;
}

ZN_API void ZN_P(xxgemv_fwd_lanes)(char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda, const ZN_T *x,
                                   ZN_T beta, const ZN_T *y, long lanes, ZN_T **dA, ZN_T **dx, ZN_T **dy) {
    (void)y;
    ZN_P(fwd_lanes)(t, m, n, alpha, A, lda, x, beta, NULL, lanes, dA, dx, dy);
}

/* xxgemv_fwd_lanes and the primal gemv y = alpha op(A) x + beta y in one call, which
   replaces Numba's (its status: 0). The caller (numba_linalg.forward_lanes) passes it
   only lanes that are a whole lane block each for x and y, with the block's spare slot
   after the last lane free: when the lanes are multiplied in place, x and y become one
   more column of that gemm; otherwise the primal is its own gemv, after the lanes, as
   Numba's call would be. */
ZN_API int ZN_P(xxgemv_fwd_lanes_value)(char t, long m, long n, ZN_T alpha, const ZN_T *A, long lda,
                                        const ZN_T *x, ZN_T beta, ZN_T *y, long lanes, ZN_T **dA, ZN_T **dx,
                                        ZN_T **dy) {
    if (!ZN_P(fwd_lanes)(t, m, n, alpha, A, lda, x, beta, y, lanes, dA, dx, dy))
        ZN_P(mv)(t, m, n, alpha, A, lda, x, beta, y);
    return 0;
}

/* ---- nrm2: result[0] = ||x|| (increment incx) -----------------------------------------
   tangent dr = <x, dx> / r; adjoint dx += rbar x / r. At r = 0 the norm has no derivative:
   NaN where a nonzero tangent or adjoint would need it. A non-positive increment (a
   reversed view) is not read the way BLAS reads it here: NaN too. */
ZN_API void *ZN_P(xxnrm2_save)(int which, long n, const ZN_T *x, long incx, const ZN_T *result) {
    if (which == 4)
        return zn_copy(result, (long)sizeof(ZN_T));
    return zn_copy(x, (n > 0 && incx > 0 ? (n - 1) * incx + 1 : 0) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(xxnrm2_fwd)(long n, const ZN_T *x, long incx, const ZN_T *result, int status, ZN_T *dx,
                             ZN_T *dresult) {
    (void)status;
    if (!dresult)
        return;
    ZN_T r = *result, dot = 0;
    if (incx <= 0 && n > 0) {
        *dresult = (ZN_T)NAN;
        return;
    }
    for (long i = 0; dx && i < n; i++)
        dot += x[i * incx] * dx[i * incx];
    *dresult = r != 0 ? dot / r : dot == 0 ? 0 : (ZN_T)NAN;
    if (r == 0 && dx)
        for (long i = 0; i < n; i++)
            if (dx[i * incx] != 0)
                *dresult = (ZN_T)NAN;
}

ZN_API void ZN_P(xxnrm2_rev)(long n, const ZN_T *x, long incx, const ZN_T *result, int status, ZN_T *dx,
                             ZN_T *dresult) {
    (void)status;
    if (!dresult)
        return;
    ZN_T rbar = *dresult, r = *result;
    *dresult = 0; /* the call overwrote result: its adjoint is consumed */
    if (!dx || rbar == 0)
        return;
    for (long i = 0; i < n; i++)
        dx[incx > 0 ? i * incx : 0] += incx > 0 && r != 0 ? rbar * x[i * incx] / r : (ZN_T)NAN;
}

/* ---- gesv: A X = B; A overwritten by its LU factors, B by X ----------------------------
   tangent  dX = A^-1 (dB - dA X);  adjoint  Bbar = A^-T Xbar, Abar = -Bbar X^T.
   The LU factors are scratch in np.linalg.solve (never read): their tangent is NaN, and an
   adjoint arriving for them (another program) makes Abar NaN rather than dropping it. */
ZN_API void *ZN_P(xgesv_save)(int which, long n, long nrhs, const ZN_T *A, long lda, const int *ipiv, const ZN_T *B,
                             long ldb) {
    if (which == 3)
        return zn_copy(A, zn_span(n, n, lda) * (long)sizeof(ZN_T));
    if (which == 5)
        return zn_copy(ipiv, (n > 0 ? n : 0) * (long)sizeof(int));
    return zn_copy(B, zn_span(n, nrhs, ldb) * (long)sizeof(ZN_T));
}

static void ZN_P(lu_solve)(char t, long n, long nrhs, const ZN_T *LU, long lda, const int *ipiv, ZN_T *M, long ldm) {
    if (n <= 0 || nrhs <= 0)
        return;
    int in = (int)n, inrhs = (int)nrhs, ilda = (int)lda, ildm = (int)ldm, info = 0;
    ZN_F(getrs)(&t, &in, &inrhs, LU, &ilda, ipiv, M, &ildm, &info);
}

ZN_API void ZN_P(xgesv_fwd)(long n, long nrhs, const ZN_T *LU, long lda, const int *ipiv, const ZN_T *X, long ldb,
                           int info, ZN_T *dA, ZN_T *dB) {
    if (info != 0) {
        ZN_P(fill_nan)(n, nrhs, dB, ldb);
        ZN_P(fill_nan)(n, n, dA, lda);
        return;
    }
    if (dB) {
        if (dA)
            ZN_P(mm)('N', 'N', n, nrhs, n, -1, dA, lda, X, ldb, 1, dB, ldb); /* dB - dA X */
        ZN_P(lu_solve)('N', n, nrhs, LU, lda, ipiv, dB, ldb);
    }
    ZN_P(fill_nan)(n, n, dA, lda); /* the LU factors' tangent: not computed */
}

ZN_API void ZN_P(xgesv_rev)(long n, long nrhs, const ZN_T *LU, long lda, const int *ipiv, const ZN_T *X, long ldb,
                           int info, ZN_T *dA, ZN_T *dB) {
    int factors_adjoint = 0;
    for (long j = 0; dA && j < n; j++)
        for (long i = 0; i < n; i++)
            factors_adjoint |= dA[i + j * lda] != 0;
    if (info != 0 || factors_adjoint) {
        ZN_P(fill_nan)(n, nrhs, dB, ldb);
        ZN_P(fill_nan)(n, n, dA, lda);
        return;
    }
    if (!dB)
        return;
    ZN_P(lu_solve)('T', n, nrhs, LU, lda, ipiv, dB, ldb); /* Bbar = A^-T Xbar */
    if (dA)
        ZN_P(mm)('N', 'T', n, n, nrhs, -1, dB, ldb, X, ldb, 0, dA, lda); /* Abar = -Bbar X^T */
}

#include "numba_lapack_runtime.h"
#include "numba_qr_runtime.h"

#endif
