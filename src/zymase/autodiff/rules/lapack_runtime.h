/* LAPACK derivatives (Cholesky: potrf, potrs) as matrix-level rules, for one precision:
   included by blas_runtime.c inside its per-precision part (ZY_T, ZY_P, ZY_B, ZY_F, ZY_API
   and the helpers are defined there, with the level-3 ones of blas_runtime_level3.h). */

/* ---- LAPACK: Cholesky factorization and solve (column-major, Fortran spelling) ------ */
/* potrf overwrites the stored triangle of A with L (A = L L^T, uplo lower) or U (A = U^T
   U, upper); potrs solves A X = B with that factor, B overwritten by X. The matrix-level
   rules (not LAPACK differentiated): with P = Phi(X) the lower triangle of X with its
   diagonal halved,
     potrf:  dL = L Phi(L^-1 dA L^-T);  the adjoint of A is G = L^-T Phi(L^T Lbar) L^-1,
             folded onto the stored triangle (G + G^T off the diagonal, G on it);
     potrs:  dX = A^-1 (dB - (dL L^T + L dL^T) X);  Bbar = A^-1 Xbar,
             Lbar = -(Bbar X^T + X Bbar^T) L on the factor's triangle.
   A factorization that fails (A not positive definite: info > 0) has no derivative: the
   tangents or adjoints it would give are NaN, never a silent number. */

/* the factor in the stored triangle of F as a packed lower-triangular L (U^T when upper) */
static ZY_T *ZY_P(lower_of)(int uplo, int n, const ZY_T *F, int ldf) {
    ZY_T *L = ZY_P(mtemp)(n, n);
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++)
            L[i + (long)j * n] = uplo == 121 ? F[j + (long)i * ldf] : F[i + (long)j * ldf];
    return L;
}

/* the stored triangle of dF set to (add == 0) or increased by the lower triangle of the
   packed R (R^T when upper) */
static void ZY_P(to_stored)(int uplo, int n, const ZY_T *R, ZY_T *dF, int ldf, int add) {
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            ZY_T *p = uplo == 121 ? dF + j + (long)i * ldf : dF + i + (long)j * ldf;
            *p = (add ? *p : 0) + R[i + (long)j * n];
        }
}

static void ZY_P(phi)(int n, ZY_T *X) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i <= j; i++)
            X[i + (long)j * n] = i == j ? X[i + (long)j * n] / 2 : 0;
}

static void ZY_P(nan_triangle)(int uplo, int n, ZY_T *dF, int ldf) {
    ZY_T *R = ZY_P(mtemp)(n, n);
    for (long i = 0; i < (long)n * n; i++)
        R[i] = (ZY_T)NAN;
    ZY_P(to_stored)(uplo, n, R, dF, ldf, 0);
    free(R);
}

/* L = chol(A) from the stored triangle of A, packed lower; NULL when A is not positive definite */
static ZY_T *ZY_P(factor_of)(int uplo, int n, const ZY_T *A, int lda) {
    ZY_T *C = ZY_P(mtemp)(n, n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            C[i + (long)j * n] = A[i + (long)j * lda];
    char u = uplo == 121 ? 'U' : 'L';
    int info = 0, ld = n > 0 ? n : 1;
    ZY_F(potrf)(&u, &n, C, &ld, &info);
    ZY_T *L = info == 0 ? ZY_P(lower_of)(uplo, n, C, ld) : NULL;
    free(C);
    return L;
}

ZY_API void *ZY_P(potrf_save)(int which, int layout, int uplo, int n, const ZY_T *A, int lda, const int *info) {
    (void)which, (void)uplo, (void)info;
    return zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(potrf_fwd)(int layout, int uplo, int n, const ZY_T *A, int lda, const int *info, ZY_T *dA) {
    (void)layout, (void)info;
    ZY_T *L = ZY_P(factor_of)(uplo, n, A, lda);
    if (!L) {
        ZY_P(nan_triangle)(uplo, n, dA, lda);
        return 0;
    }
    int ld = n > 0 ? n : 1;
    ZY_T *S = ZY_P(mtemp)(n, n); /* the symmetric tangent of A */
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++) {
            ZY_T t = uplo == 121 ? dA[j + (long)i * lda] : dA[i + (long)j * lda];
            S[i + (long)j * n] = S[j + (long)i * n] = t;
        }
    ZY_B(trsm)(102, 141, 122, 111, 131, n, n, 1, L, ld, S, ld); /* L^-1 S */
    ZY_B(trsm)(102, 142, 122, 112, 131, n, n, 1, L, ld, S, ld); /* ... L^-T */
    ZY_P(phi)(n, S);
    ZY_B(trmm)(102, 141, 122, 111, 131, n, n, 1, L, ld, S, ld); /* L Phi(...) */
    ZY_P(to_stored)(uplo, n, S, dA, lda, 0);
    free(L), free(S);
    return 0;
}

ZY_API void ZY_P(potrf_rev)(int layout, int uplo, int n, const ZY_T *A, int lda, int info, ZY_T *dA, ZY_T dr) {
    (void)layout, (void)dr;
    ZY_T *L = info == 0 ? ZY_P(factor_of)(uplo, n, A, lda) : NULL; /* A: the input, kept at the call */
    if (!L) {
        ZY_P(nan_triangle)(uplo, n, dA, lda);
        return;
    }
    int ld = n > 0 ? n : 1;
    ZY_T *G = ZY_P(lower_of)(uplo, n, dA, lda); /* Lbar */
    ZY_B(trmm)(102, 141, 122, 112, 131, n, n, 1, L, ld, G, ld); /* L^T Lbar */
    ZY_P(phi)(n, G);
    ZY_B(trsm)(102, 141, 122, 112, 131, n, n, 1, L, ld, G, ld); /* L^-T Phi */
    ZY_B(trsm)(102, 142, 122, 111, 131, n, n, 1, L, ld, G, ld); /* ... L^-1 */
    ZY_T *R = ZY_P(mtemp)(n, n);
    for (int j = 0; j < n; j++)
        for (int i = j; i < n; i++)
            R[i + (long)j * n] = i == j ? G[i + (long)j * n] : G[i + (long)j * n] + G[j + (long)i * n];
    ZY_P(to_stored)(uplo, n, R, dA, lda, 0);
    free(L), free(G), free(R);
}

ZY_API void *ZY_P(potrs_save)(int which, int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B,
                              int ldb, const int *info) {
    (void)uplo, (void)info;
    return which == 4 ? zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T))
                      : zy_copy_span(B, zy_mspan(layout, n, nrhs, ldb), sizeof(ZY_T));
}

/* A^-1 M in place (M n x nrhs, leading dimension ldm), with the factor in A */
static void ZY_P(solve)(int uplo, int n, int nrhs, const ZY_T *A, int lda, ZY_T *M, int ldm) {
    char u = uplo == 121 ? 'U' : 'L';
    int info = 0;
    ZY_F(potrs)(&u, &n, &nrhs, A, &lda, M, &ldm, &info);
}

ZY_API ZY_T ZY_P(potrs_fwd)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                            const int *info, const ZY_T *dA, ZY_T *dB) {
    (void)info;
    if (dA) { /* dB -= (dL L^T + L dL^T) X */
        int ld = n > 0 ? n : 1;
        ZY_T *X = ZY_P(mcopy)(layout, n, nrhs, B, ldb), *L = ZY_P(lower_of)(uplo, n, A, lda);
        ZY_T *dL = ZY_P(lower_of)(uplo, n, dA, lda), *T = ZY_P(mtemp)(n, n);
        ZY_P(solve)(uplo, n, nrhs, A, lda, X, ld);
        ZY_B(gemm)(102, 111, 112, n, n, n, 1, dL, ld, L, ld, 0, T, ld);
        ZY_B(gemm)(102, 111, 112, n, n, n, 1, L, ld, dL, ld, 1, T, ld);
        ZY_B(gemm)(102, 111, 111, n, nrhs, n, -1, T, ld, X, ld, 1, dB, ldb);
        free(X), free(L), free(dL), free(T);
    }
    ZY_P(solve)(uplo, n, nrhs, A, lda, dB, ldb);
    return 0;
}

ZY_API void ZY_P(potrs_rev)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                            int info, ZY_T *dA, ZY_T *dB, ZY_T dr) {
    (void)info, (void)dr;
    ZY_P(solve)(uplo, n, nrhs, A, lda, dB, ldb); /* Bbar = A^-1 Xbar */
    if (dA) { /* Lbar = -(Bbar X^T + X Bbar^T) L, X solved again from the B kept at the call */
        int ld = n > 0 ? n : 1;
        ZY_T *X = ZY_P(mcopy)(layout, n, nrhs, B, ldb), *L = ZY_P(lower_of)(uplo, n, A, lda);
        ZY_T *W = ZY_P(mtemp)(n, n), *R = ZY_P(mtemp)(n, n);
        ZY_P(solve)(uplo, n, nrhs, A, lda, X, ld);
        ZY_B(gemm)(102, 111, 112, n, n, nrhs, 1, dB, ldb, X, ld, 0, W, ld);
        ZY_B(gemm)(102, 111, 112, n, n, nrhs, 1, X, ld, dB, ldb, 1, W, ld);
        ZY_B(gemm)(102, 111, 111, n, n, n, -1, W, ld, L, ld, 0, R, ld);
        ZY_P(to_stored)(uplo, n, R, dA, lda, 1);
        free(X), free(L), free(W), free(R);
    }
}
