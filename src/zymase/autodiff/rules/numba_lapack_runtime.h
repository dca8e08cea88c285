/* Derivatives of Numba's Cholesky, LU, eigen, SVD and least-squares helpers, for one precision:
   included by numba_linalg_runtime.c inside its per-precision part (ZN_T, ZN_P, ZN_F and
   its helpers are defined there).

   The math is the C path's matrix-level LAPACK rules, not written twice: lapack_runtime.h
   (potrf: the blocked Cholesky adjoint), lapack_lu.h
   (getrf), lapack_eigen.h (syevd), lapack_svd.h (gesdd) and lapack_lstsq.h (gelsd) are
   compiled once more here, with their BLAS calls (CBLAS spelling, column-major) turned
   into SciPy's Fortran routines and their names under this runtime's prefix
   (__zymase_nblas_<p>lapack_*). Cholesky works from the factor the call computed (its
   forward part runs after the call, the reverse sweep reads the factor kept after it:
   numba_linalg.py's keeps):
     numba_xxpotrf      the stored triangle overwritten by the factor (np.linalg.cholesky)
   The other rules factor the input again in the derivative, so those helpers run their
   forward part BEFORE the primal call and keep their inputs for the reverse sweep
   (numba_linalg.py: inputs_kept):
     numba_xxgetrf      A = P L U in place            (np.linalg.det, slogdet, inv)
     numba_ez_xxgetri   the factors overwritten by A^-1 (np.linalg.inv, after getrf)
     numba_ez_xxxevd    eigenvalues, and eigenvectors over A for jobz 'V' (eigh, eigvalsh)
     numba_ez_gesdd     s, U, V^T (jobz 'S' or 'A')   (np.linalg.svd, pinv)
     numba_ez_gelsd     X = A^+ B in B's first n rows (np.linalg.lstsq)
   The degenerate cases are the C rules': repeated eigenvalues or singular values give
   inf/NaN where the result depends on the eigen/singular vectors they mix (never a
   plausible number), a rank-deficient lstsq gives NaN, and so do the complement columns
   of a full (jobz 'A') SVD of a rectangular matrix. */

/* lapack_runtime.h's potrs rule names it; no helper here calls that rule, so the compiler
   drops it and the routine is never resolved */
void ZN_F(potrs)(const char *uplo, const int *n, const int *nrhs, const ZN_T *A, const int *lda, ZN_T *B, const int *ldb,
                 int *info);
void ZN_F(getrf)(const int *m, const int *n, ZN_T *A, const int *lda, int *ipiv, int *info);
void ZN_F(laswp)(const int *n, ZN_T *A, const int *lda, const int *k1, const int *k2, const int *ipiv, const int *incx);
void ZN_F(syev)(const char *jobz, const char *uplo, const int *n, ZN_T *A, const int *lda, ZN_T *w, ZN_T *work,
                const int *lwork, int *info);
void ZN_F(syevd)(const char *jobz, const char *uplo, const int *n, ZN_T *A, const int *lda, ZN_T *w, ZN_T *work,
                 const int *lwork, int *iwork, const int *liwork, int *info);
void ZN_F(gesdd)(const char *jobz, const int *m, const int *n, ZN_T *A, const int *lda, ZN_T *s, ZN_T *U, const int *ldu,
                 ZN_T *VT, const int *ldvt, ZN_T *work, const int *lwork, int *iwork, int *info);

/* ---- the CBLAS calls of the C rules, over SciPy's Fortran BLAS -----------------------
   The rules call them column-major (layout 102) only; enumerations are CBLAS's (zn_op). */
static void ZN_P(cb_gemm)(int layout, int ta, int tb, int m, int n, int k, ZN_T alpha, const ZN_T *A, int lda,
                          const ZN_T *B, int ldb, ZN_T beta, ZN_T *C, int ldc) {
    (void)layout;
    ZN_P(mm)(zn_op(ta), zn_op(tb), m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

static void ZN_P(cb_trsm)(int layout, int side, int uplo, int trans, int diag, int m, int n, ZN_T alpha, const ZN_T *A,
                          int lda, ZN_T *B, int ldb) {
    (void)layout;
    char s = side == 141 ? 'L' : 'R', u = uplo == 121 ? 'U' : 'L', t = zn_op(trans), d = diag == 132 ? 'U' : 'N';
    if (m > 0 && n > 0)
        ZN_F(trsm)(&s, &u, &t, &d, &m, &n, &alpha, A, &lda, B, &ldb);
}

static void ZN_P(cb_trmm)(int layout, int side, int uplo, int trans, int diag, int m, int n, ZN_T alpha, const ZN_T *A,
                          int lda, ZN_T *B, int ldb) {
    (void)layout;
    char s = side == 141 ? 'L' : 'R', u = uplo == 121 ? 'U' : 'L', t = zn_op(trans), d = diag == 132 ? 'U' : 'N';
    if (m > 0 && n > 0)
        ZN_F(trmm)(&s, &u, &t, &d, &m, &n, &alpha, A, &lda, B, &ldb);
}

#define ZY_T ZN_T
#define ZY_P(name) ZN_P(lapack_##name)
#define ZY_B(name) ZN_P(cb_##name)
#define ZY_F(name) ZN_F(name)
/* the C rules' entry points the helpers below do not call are dropped by the compiler */
#define ZY_API static __attribute__((unused))

/* blas_runtime_level3.h's temporaries, column-major only (that file's other rules,
   symm/syrk/trmm/trsm, are not needed here) */
static ZY_T *ZY_P(mtemp)(int rows, int cols) {
    return calloc((size_t)(rows > 0 && cols > 0 ? (long)rows * cols : 1), sizeof(ZY_T));
}

static ZY_T *ZY_P(mcopy)(int layout, int rows, int cols, const ZY_T *X, int ldx) {
    (void)layout;
    ZY_T *t = ZY_P(mtemp)(rows, cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++)
            t[i + (long)j * rows] = X[i + (long)j * ldx];
    return t;
}

#include "lapack_runtime.h"
#include "lapack_lu.h"
#include "lapack_eigen.h"
#include "lapack_svd.h"
#include "lapack_lstsq.h"

/* ---- numba_xxpotrf(kind, uplo, n, A, lda): Cholesky in place --------------------------
   lapack_runtime.h's rules on the factor F the call left over A (uplo 'U': A = U^T U, as
   np.linalg.cholesky calls it on C-order data); the other triangle is not read, its
   adjoint passes. A failed factorization (status != 0) gives NaN. */
ZN_API void *ZN_P(xxpotrf_save)(int which, char uplo, long n, const ZN_T *A, long lda) {
    (void)which, (void)uplo;
    return zn_copy(A, zn_span(n, n, lda) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(xxpotrf_fwd)(char uplo, long n, const ZN_T *F, long lda, int info, ZN_T *dA) {
    ZY_P(potrf_fwd)(102, zn_uplo(uplo), (int)n, F, (int)lda, &info, dA);
}

ZN_API void ZN_P(xxpotrf_rev)(char uplo, long n, const ZN_T *F, long lda, int info, ZN_T *dA) {
    if (!dA || n <= 0)
        return;
    if (info != 0) {
        ZY_P(nan_triangle)(zn_uplo(uplo), (int)n, dA, (int)lda);
        return;
    }
    /* F is the rule's copy of the factor (keeps, freed after this call): transposed in place */
    ZY_P(potrf_adjoint_stored)(zn_uplo(uplo), (int)n, (ZN_T *)F, (int)lda, 1, dA);
}

/* ---- numba_xxgetrf(kind, m, n, A, lda, ipiv) ------------------------------------------ */
ZN_API void *ZN_P(xxgetrf_save)(int which, long m, long n, const ZN_T *A, long lda, const int *ipiv) {
    (void)which, (void)ipiv;
    return zn_copy(A, zn_span(m, n, lda) * (long)sizeof(ZN_T));
}

/* before the call (A: the input; its reverse keeps the input, which forward_after would
   copy after the call), so the input is factored here */
ZN_API void ZN_P(xxgetrf_fwd)(long m, long n, const ZN_T *A, long lda, const int *ipiv, ZN_T *dA) {
    (void)ipiv;
    if (dA)
        ZY_P(getrf_tangent_of_input)((int)m, (int)n, A, (int)lda, dA);
}

ZN_API void ZN_P(xxgetrf_rev)(long m, long n, const ZN_T *A, long lda, const int *ipiv, ZN_T *dA) {
    if (dA)
        ZY_P(getrf_rev)(102, (int)m, (int)n, A, (int)lda, ipiv, 0 /* info: Numba raised otherwise */, dA, 0);
}

/* ---- numba_ez_xxgetri(kind, n, A, lda, ipiv): A's LU factors F overwritten by A^-1 ---
   With dA0 = P (dL U + L dU) the tangent of the matrix the factors stand for
   (lapack_lu.h's lu_product_tangent):
     tangent  d(A^-1) = -A^-1 dA0 A^-1;
     adjoint  Abar = -A^-T Xbar A^-T, onto the factors by lu_product_adjoint (the call
              overwrites all of A: its adjoint before the call is that alone).
   Every product with A^-1 is a solve with the factors. */
/* M = M op(A)^-1 for the packed n x n M: (op(A)^-T M^T)^T */
static void ZN_P(solve_right)(int trans, int n, const ZN_T *F, int ldf, const int *ipiv, ZN_T *M) {
    for (int j = 0; j < n; j++)
        for (int i = j + 1; i < n; i++) {
            ZN_T t = M[i + (long)j * n];
            M[i + (long)j * n] = M[j + (long)i * n];
            M[j + (long)i * n] = t;
        }
    ZY_P(lu_solve)(trans == 111 ? 112 : 111, n, n, F, ldf, ipiv, M, n);
    for (int j = 0; j < n; j++)
        for (int i = j + 1; i < n; i++) {
            ZN_T t = M[i + (long)j * n];
            M[i + (long)j * n] = M[j + (long)i * n];
            M[j + (long)i * n] = t;
        }
}

ZN_API void *ZN_P(ez_xxgetri_save)(int which, long n, const ZN_T *A, long lda, const int *ipiv) {
    if (which == 4) /* the pivots */
        return zn_copy(ipiv, (n > 0 ? n : 0) * (long)sizeof(int));
    return zn_copy(A, zn_span(n, n, lda) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(ez_xxgetri_fwd)(long n, const ZN_T *F, long lda, const int *ipiv, ZN_T *dA) {
    if (!dA || n <= 0)
        return;
    int in = (int)n, ld = (int)lda;
    ZN_T *T = ZY_P(lu_product_tangent)(in, F, ld, ipiv, dA, ld);
    ZY_P(lu_solve)(111, in, in, F, ld, ipiv, T, in); /* A^-1 dA0 */
    ZN_P(solve_right)(111, in, F, ld, ipiv, T);      /* ... A^-1 */
    for (long j = 0; j < n; j++)
        for (long i = 0; i < n; i++)
            dA[i + j * lda] = -T[i + j * n];
    free(T);
}

ZN_API void ZN_P(ez_xxgetri_rev)(long n, const ZN_T *F, long lda, const int *ipiv, ZN_T *dA) {
    if (!dA || n <= 0)
        return;
    int in = (int)n, ld = (int)lda;
    ZN_T *G = ZY_P(mcopy)(102, in, in, dA, ld);
    ZY_P(lu_solve)(112, in, in, F, ld, ipiv, G, in); /* A^-T Xbar */
    ZN_P(solve_right)(112, in, F, ld, ipiv, G);      /* ... A^-T */
    for (long j = 0; j < n; j++)
        for (long i = 0; i < n; i++) {
            G[i + j * n] = -G[i + j * n];
            dA[i + j * lda] = 0;
        }
    ZY_P(lu_product_adjoint)(in, F, ld, ipiv, G, dA, ld);
    free(G);
}

/* ---- numba_ez_xxxevd(kind, jobz, uplo, n, A, lda, w) (syevd) -------------------------- */
ZN_API void *ZN_P(ez_xxxevd_save)(int which, char jobz, char uplo, long n, const ZN_T *A, long lda, const ZN_T *w) {
    (void)which, (void)jobz, (void)uplo, (void)w;
    return zn_copy(A, zn_span(n, n, lda) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(ez_xxxevd_fwd)(char jobz, char uplo, long n, const ZN_T *A, long lda, const ZN_T *w, ZN_T *dA,
                                ZN_T *dw) {
    (void)w;
    ZY_P(eig_fwd)(1, jobz == 'V' || jobz == 'v', zn_uplo(uplo), (int)n, A, (int)lda, 0, dA, dw, NULL);
}

ZN_API void ZN_P(ez_xxxevd_rev)(char jobz, char uplo, long n, const ZN_T *A, long lda, const ZN_T *w, ZN_T *dA,
                                ZN_T *dw) {
    (void)w;
    ZY_P(eig_rev)(1, jobz == 'V' || jobz == 'v', zn_uplo(uplo), (int)n, A, (int)lda, 0, dA, dw, NULL);
}

/* ---- numba_ez_gesdd(kind, jobz, m, n, A, lda, s, U, ldu, VT, ldvt) -------------------- */
ZN_API void *ZN_P(ez_gesdd_save)(int which, char jobz, long m, long n, const ZN_T *A, long lda, const ZN_T *s,
                                 const ZN_T *U, long ldu, const ZN_T *VT, long ldvt) {
    (void)which, (void)jobz, (void)s, (void)U, (void)ldu, (void)VT, (void)ldvt;
    return zn_copy(A, zn_span(m, n, lda) * (long)sizeof(ZN_T));
}

ZN_API void ZN_P(ez_gesdd_fwd)(char jobz, long m, long n, const ZN_T *A, long lda, const ZN_T *s, const ZN_T *U,
                               long ldu, const ZN_T *VT, long ldvt, ZN_T *dA, ZN_T *ds, ZN_T *dU, ZN_T *dVT) {
    ZY_P(gesdd_fwd)(102, jobz, (int)m, (int)n, A, (int)lda, s, U, (int)ldu, VT, (int)ldvt, NULL, 0, NULL, NULL, dA, ds,
                    dU, dVT, NULL);
}

ZN_API void ZN_P(ez_gesdd_rev)(char jobz, long m, long n, const ZN_T *A, long lda, const ZN_T *s, const ZN_T *U,
                               long ldu, const ZN_T *VT, long ldvt, ZN_T *dA, ZN_T *ds, ZN_T *dU, ZN_T *dVT) {
    ZY_P(gesdd_rev)(102, jobz, (int)m, (int)n, A, (int)lda, s, U, (int)ldu, VT, (int)ldvt, NULL, 0, NULL, 0, dA, ds,
                    dU, dVT, NULL, 0);
}

/* ---- numba_ez_gelsd(kind, m, n, nrhs, A, lda, B, ldb, s, rcond, rank) ------------------ */
ZN_API void *ZN_P(ez_gelsd_save)(int which, long m, long n, long nrhs, const ZN_T *A, long lda, const ZN_T *B,
                                 long ldb, const ZN_T *s, double rcond, const int *rank) {
    (void)s, (void)rcond, (void)rank;
    if (which == 4) /* A */
        return zn_copy(A, zn_span(m, n, lda) * (long)sizeof(ZN_T));
    return zn_copy(B, zn_span(m, nrhs, ldb) * (long)sizeof(ZN_T)); /* B's m rows read */
}

ZN_API void ZN_P(ez_gelsd_fwd)(long m, long n, long nrhs, const ZN_T *A, long lda, const ZN_T *B, long ldb,
                               const ZN_T *s, double rcond, const int *rank, ZN_T *dA, ZN_T *dB, ZN_T *ds) {
    ZY_P(gelsd_fwd)(102, (int)m, (int)n, (int)nrhs, A, (int)lda, B, (int)ldb, s, (ZN_T)rcond, rank, NULL, 0, NULL,
                    NULL, dA, dB, ds, NULL);
}

ZN_API void ZN_P(ez_gelsd_rev)(long m, long n, long nrhs, const ZN_T *A, long lda, const ZN_T *B, long ldb,
                               const ZN_T *s, double rcond, const int *rank, ZN_T *dA, ZN_T *dB, ZN_T *ds) {
    ZY_P(gelsd_rev)(102, (int)m, (int)n, (int)nrhs, A, (int)lda, B, (int)ldb, s, (ZN_T)rcond, rank, NULL, 0, NULL,
                    0, dA, dB, ds, NULL, 0);
}

#undef ZY_T
#undef ZY_P
#undef ZY_B
#undef ZY_F
#undef ZY_API
