/* Level-3 BLAS derivatives besides gemm (symm, syrk, trmm, trsm), for one precision:
   included by blas_runtime.c inside its per-precision part (ZY_T, ZY_P, ZY_B, ZY_API and
   the helpers are defined there; see its opening comment for the calling conventions). */

/* ---- level 3 helpers -------------------------------------------------------------- */
static ZY_T *ZY_P(mtemp)(int rows, int cols) {
    return calloc((size_t)(rows > 0 && cols > 0 ? (long)rows * cols : 1), sizeof(ZY_T));
}

/* a packed copy of a rows x cols matrix */
static ZY_T *ZY_P(mcopy)(int layout, int rows, int cols, const ZY_T *X, int ldx) {
    ZY_T *t = ZY_P(mtemp)(rows, cols);
    int ld = zy_ld(layout, rows, cols);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            t[zy_ij(layout, ld, i, j)] = X[zy_ij(layout, ldx, i, j)];
    return t;
}

/* the stored triangle of the n x n A as a full packed matrix (zeros elsewhere and on a
   unit diagonal): the triangular operand of a tangent */
static ZY_T *ZY_P(tri_full)(int layout, int uplo, int diag, int n, const ZY_T *A, int lda) {
    ZY_T *F = ZY_P(mtemp)(n, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (zy_tri_stored(uplo, 111, diag, i, j))
                F[zy_ij(layout, n, i, j)] = A[zy_ij(layout, lda, i, j)];
    return F;
}

/* dA += G, G the adjoint of op(A) (packed n x n), on A's stored elements */
static void ZY_P(tri_fold)(int layout, int uplo, int trans, int diag, int n, const ZY_T *G, ZY_T *dA, int lda) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (zy_tri_stored(uplo, trans, diag, i, j))
                dA[trans != 111 ? zy_ij(layout, lda, j, i) : zy_ij(layout, lda, i, j)] += G[zy_ij(layout, n, i, j)];
}

/* on the stored triangle of an n x n symmetric C only */
static void ZY_P(tscale)(int layout, int uplo, int n, ZY_T a, ZY_T *C, int ldc) {
    if (a == 1)
        return;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (zy_in_triangle(uplo, i, j)) {
                ZY_T *p = C + zy_ij(layout, ldc, i, j);
                *p = a == 0 ? 0 : a * *p;
            }
}

static ZY_T ZY_P(tdot)(int layout, int uplo, int n, const ZY_T *X, int ldx, const ZY_T *Y, int ldy) {
    ZY_T s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (zy_in_triangle(uplo, i, j))
                s += X[zy_ij(layout, ldx, i, j)] * Y[zy_ij(layout, ldy, i, j)];
    return s;
}

/* ---- symm: C = alpha A B + beta C (left) or alpha B A + beta C (right), A symmetric --- */
ZY_API void *ZY_P(symm_save)(int which, int layout, int side, int uplo, int m, int n, ZY_T alpha, const ZY_T *A, int lda,
                      const ZY_T *B, int ldb, ZY_T beta, const ZY_T *C, int ldc) {
    (void)uplo, (void)alpha, (void)beta;
    int ka = side == 141 ? m : n;
    if (which == 6)
        return zy_copy_span(A, zy_mspan(layout, ka, ka, lda), sizeof(ZY_T));
    if (which == 8)
        return zy_copy_span(B, zy_mspan(layout, m, n, ldb), sizeof(ZY_T));
    return zy_copy_span(C, zy_mspan(layout, m, n, ldc), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(symm_fwd)(int layout, int side, int uplo, int m, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *B,
                    int ldb, ZY_T beta, const ZY_T *C, int ldc, const ZY_T *dA, const ZY_T *dB, ZY_T *dC,
                    ZY_T dalpha, ZY_T dbeta) {
    ZY_P(mscale)(layout, m, n, beta, dC, ldc);
    if (dbeta != 0)
        ZY_P(maxpy)(layout, m, n, dbeta, C, ldc, dC, ldc);
    if (dA)
        ZY_B(symm)(layout, side, uplo, m, n, alpha, dA, lda, B, ldb, 1, dC, ldc);
    if (dB)
        ZY_B(symm)(layout, side, uplo, m, n, alpha, A, lda, dB, ldb, 1, dC, ldc);
    if (dalpha != 0)
        ZY_B(symm)(layout, side, uplo, m, n, dalpha, A, lda, B, ldb, 1, dC, ldc);
    return 0;
}

ZY_API ZY_T ZY_P(symm_dscalar)(int which, int layout, int side, int uplo, int m, int n, ZY_T alpha, const ZY_T *A, int lda,
                        const ZY_T *B, int ldb, ZY_T beta, const ZY_T *C, int ldc, const ZY_T *dA, const ZY_T *dB,
                        const ZY_T *dC, ZY_T dr) {
    (void)alpha, (void)beta, (void)dA, (void)dB, (void)dr;
    if (which == 10)
        return ZY_P(mdot)(layout, m, n, C, ldc, dC, ldc);
    int ld = zy_ld(layout, m, n);
    ZY_T *t = ZY_P(mtemp)(m, n);
    ZY_B(symm)(layout, side, uplo, m, n, 1, A, lda, B, ldb, 0, t, ld);
    ZY_T s = ZY_P(mdot)(layout, m, n, t, ld, dC, ldc);
    free(t);
    return s;
}

ZY_API void ZY_P(symm_rev)(int layout, int side, int uplo, int m, int n, ZY_T alpha, const ZY_T *A, int lda, const ZY_T *B,
                    int ldb, ZY_T beta, const ZY_T *C, int ldc, ZY_T *dA, ZY_T *dB, ZY_T *dC, ZY_T dr) {
    (void)C, (void)dr;
    if (dA) {
        /* the full matrix's adjoint G (alpha dC B^T, or alpha B^T dC on the right) folded
           onto the stored triangle: G + G^T off the diagonal (syr2k), G on it */
        int left = side == 141, ka = left ? m : n;
        if (left)
            ZY_B(syr2k)(layout, uplo, 111, m, n, alpha, dC, ldc, B, ldb, 1, dA, lda);
        else
            ZY_B(syr2k)(layout, uplo, 112, n, m, alpha, B, ldb, dC, ldc, 1, dA, lda);
        for (int d = 0; d < ka; d++) {
            ZY_T g = 0;
            for (int o = 0; o < (left ? n : m); o++)
                g += left ? dC[zy_ij(layout, ldc, d, o)] * B[zy_ij(layout, ldb, d, o)]
                          : B[zy_ij(layout, ldb, o, d)] * dC[zy_ij(layout, ldc, o, d)];
            dA[zy_ij(layout, lda, d, d)] -= alpha * g;
        }
    }
    if (dB)
        ZY_B(symm)(layout, side, uplo, m, n, alpha, A, lda, dC, ldc, 1, dB, ldb);
    ZY_P(mscale)(layout, m, n, beta, dC, ldc);
}

/* ---- syrk: C = alpha op(A) op(A)^T + beta C on C's stored triangle, op(A) n x k ------- */
ZY_API void *ZY_P(syrk_save)(int which, int layout, int uplo, int trans, int n, int k, ZY_T alpha, const ZY_T *A, int lda,
                      ZY_T beta, const ZY_T *C, int ldc) {
    (void)uplo, (void)alpha, (void)beta;
    if (which == 6)
        return trans != 111 ? zy_copy_span(A, zy_mspan(layout, k, n, lda), sizeof(ZY_T))
                            : zy_copy_span(A, zy_mspan(layout, n, k, lda), sizeof(ZY_T));
    return zy_copy_span(C, zy_mspan(layout, n, n, ldc), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(syrk_fwd)(int layout, int uplo, int trans, int n, int k, ZY_T alpha, const ZY_T *A, int lda, ZY_T beta,
                    const ZY_T *C, int ldc, const ZY_T *dA, ZY_T *dC, ZY_T dalpha, ZY_T dbeta) {
    ZY_P(tscale)(layout, uplo, n, beta, dC, ldc);
    if (dbeta != 0)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (zy_in_triangle(uplo, i, j))
                    dC[zy_ij(layout, ldc, i, j)] += dbeta * C[zy_ij(layout, ldc, i, j)];
    if (dA)
        ZY_B(syr2k)(layout, uplo, trans, n, k, alpha, dA, lda, A, lda, 1, dC, ldc);
    if (dalpha != 0)
        ZY_B(syrk)(layout, uplo, trans, n, k, dalpha, A, lda, 1, dC, ldc);
    return 0;
}

ZY_API ZY_T ZY_P(syrk_dscalar)(int which, int layout, int uplo, int trans, int n, int k, ZY_T alpha, const ZY_T *A, int lda,
                        ZY_T beta, const ZY_T *C, int ldc, const ZY_T *dA, const ZY_T *dC, ZY_T dr) {
    (void)alpha, (void)beta, (void)dA, (void)dr;
    if (which == 8)
        return ZY_P(tdot)(layout, uplo, n, C, ldc, dC, ldc);
    ZY_T *t = ZY_P(mtemp)(n, n);
    ZY_B(syrk)(layout, uplo, trans, n, k, 1, A, lda, 0, t, n > 0 ? n : 1);
    ZY_T s = ZY_P(tdot)(layout, uplo, n, t, n, dC, ldc);
    free(t);
    return s;
}

ZY_API void ZY_P(syrk_rev)(int layout, int uplo, int trans, int n, int k, ZY_T alpha, const ZY_T *A, int lda, ZY_T beta,
                    const ZY_T *C, int ldc, ZY_T *dA, ZY_T *dC, ZY_T dr) {
    (void)C, (void)dr;
    if (dA) {
        /* d op(A) = alpha (G + G^T) op(A), G the stored triangle of dC */
        int ld = n > 0 ? n : 1;
        ZY_T *S = ZY_P(mtemp)(n, n);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                if (zy_in_triangle(uplo, i, j)) {
                    ZY_T g = dC[zy_ij(layout, ldc, i, j)];
                    S[zy_ij(layout, ld, i, j)] += g;
                    S[zy_ij(layout, ld, j, i)] += g;
                }
        if (trans == 111) /* dA (n x k) += alpha S A */
            ZY_B(gemm)(layout, 111, 111, n, k, n, alpha, S, ld, A, lda, 1, dA, lda);
        else /* dA (k x n) += alpha A S */
            ZY_B(gemm)(layout, 111, 111, k, n, n, alpha, A, lda, S, ld, 1, dA, lda);
        free(S);
    }
    ZY_P(tscale)(layout, uplo, n, beta, dC, ldc);
}

/* ---- trmm: B = alpha op(A) B (left) or alpha B op(A) (right), A triangular --------- */
ZY_API void *ZY_P(trmm_save)(int which, int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha,
                      const ZY_T *A, int lda, const ZY_T *B, int ldb) {
    (void)uplo, (void)transa, (void)diag, (void)alpha;
    int ka = side == 141 ? m : n;
    if (which == 8)
        return zy_copy_span(A, zy_mspan(layout, ka, ka, lda), sizeof(ZY_T));
    return zy_copy_span(B, zy_mspan(layout, m, n, ldb), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(trmm_fwd)(int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha, const ZY_T *A,
                    int lda, const ZY_T *B, int ldb, const ZY_T *dA, ZY_T *dB, ZY_T dalpha) {
    int left = side == 141, ka = left ? m : n, ld = zy_ld(layout, m, n);
    ZY_T *R = ZY_P(mtemp)(m, n);
    if (dA) { /* alpha op(dA) B, the unit diagonal's tangent 0 */
        ZY_T *F = ZY_P(tri_full)(layout, uplo, diag, ka, dA, lda);
        if (left)
            ZY_B(gemm)(layout, transa, 111, m, n, m, alpha, F, ka, B, ldb, 1, R, ld);
        else
            ZY_B(gemm)(layout, 111, transa, m, n, n, alpha, B, ldb, F, ka, 1, R, ld);
        free(F);
    }
    if (dalpha != 0) {
        ZY_T *P = ZY_P(mcopy)(layout, m, n, B, ldb);
        ZY_B(trmm)(layout, side, uplo, transa, diag, m, n, dalpha, A, lda, P, ld);
        ZY_P(maxpy)(layout, m, n, 1, P, ld, R, ld);
        free(P);
    }
    ZY_B(trmm)(layout, side, uplo, transa, diag, m, n, alpha, A, lda, dB, ldb);
    ZY_P(maxpy)(layout, m, n, 1, R, ld, dB, ldb);
    free(R);
    return 0;
}

ZY_API ZY_T ZY_P(trmm_dscalar)(int which, int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha,
                        const ZY_T *A, int lda, const ZY_T *B, int ldb, const ZY_T *dA, const ZY_T *dB, ZY_T dr) {
    (void)which, (void)alpha, (void)dA, (void)dr;
    int ld = zy_ld(layout, m, n);
    ZY_T *P = ZY_P(mcopy)(layout, m, n, B, ldb);
    ZY_B(trmm)(layout, side, uplo, transa, diag, m, n, 1, A, lda, P, ld);
    ZY_T s = ZY_P(mdot)(layout, m, n, P, ld, dB, ldb);
    free(P);
    return s;
}

ZY_API void ZY_P(trmm_rev)(int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha, const ZY_T *A,
                    int lda, const ZY_T *B, int ldb, ZY_T *dA, ZY_T *dB, ZY_T dr) {
    (void)dr;
    int left = side == 141, ka = left ? m : n;
    if (dA) { /* the adjoint of op(A): alpha dB B^T (left), alpha B^T dB (right) */
        ZY_T *G = ZY_P(mtemp)(ka, ka);
        if (left)
            ZY_B(gemm)(layout, 111, 112, m, m, n, alpha, dB, ldb, B, ldb, 0, G, ka);
        else
            ZY_B(gemm)(layout, 112, 111, n, n, m, alpha, B, ldb, dB, ldb, 0, G, ka);
        ZY_P(tri_fold)(layout, uplo, transa, diag, ka, G, dA, lda);
        free(G);
    }
    ZY_B(trmm)(layout, side, uplo, transa != 111 ? 111 : 112, diag, m, n, alpha, A, lda, dB, ldb);
}

/* ---- trsm: B = alpha op(A)^-1 B (left) or alpha B op(A)^-1 (right) ------------------- */
ZY_API void *ZY_P(trsm_save)(int which, int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha,
                      const ZY_T *A, int lda, const ZY_T *B, int ldb) {
    return ZY_P(trmm_save)(which, layout, side, uplo, transa, diag, m, n, alpha, A, lda, B, ldb);
}

ZY_API ZY_T ZY_P(trsm_fwd)(int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha, const ZY_T *A,
                    int lda, const ZY_T *B, int ldb, const ZY_T *dA, ZY_T *dB, ZY_T dalpha) {
    /* op(A) X = alpha B: dX = op(A)^-1 (alpha dB + dalpha B - op(dA) X) (left; mirrored right) */
    int left = side == 141, ka = left ? m : n, ld = zy_ld(layout, m, n);
    ZY_P(mscale)(layout, m, n, alpha, dB, ldb);
    if (dalpha != 0)
        ZY_P(maxpy)(layout, m, n, dalpha, B, ldb, dB, ldb);
    if (dA) {
        ZY_T *X = ZY_P(mcopy)(layout, m, n, B, ldb);
        ZY_B(trsm)(layout, side, uplo, transa, diag, m, n, alpha, A, lda, X, ld);
        ZY_T *F = ZY_P(tri_full)(layout, uplo, diag, ka, dA, lda);
        if (left)
            ZY_B(gemm)(layout, transa, 111, m, n, m, -1, F, ka, X, ld, 1, dB, ldb);
        else
            ZY_B(gemm)(layout, 111, transa, m, n, n, -1, X, ld, F, ka, 1, dB, ldb);
        free(X), free(F);
    }
    ZY_B(trsm)(layout, side, uplo, transa, diag, m, n, 1, A, lda, dB, ldb);
    return 0;
}

ZY_API ZY_T ZY_P(trsm_dscalar)(int which, int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha,
                        const ZY_T *A, int lda, const ZY_T *B, int ldb, const ZY_T *dA, const ZY_T *dB, ZY_T dr) {
    (void)which, (void)alpha, (void)dA, (void)dr;
    /* dalpha = <S, B>, S = op(A)^-T dX (left) or dX op(A)^-T (right) */
    int ld = zy_ld(layout, m, n);
    ZY_T *S = ZY_P(mcopy)(layout, m, n, dB, ldb);
    ZY_B(trsm)(layout, side, uplo, transa != 111 ? 111 : 112, diag, m, n, 1, A, lda, S, ld);
    ZY_T s = ZY_P(mdot)(layout, m, n, S, ld, B, ldb);
    free(S);
    return s;
}

ZY_API void ZY_P(trsm_rev)(int layout, int side, int uplo, int transa, int diag, int m, int n, ZY_T alpha, const ZY_T *A,
                    int lda, const ZY_T *B, int ldb, ZY_T *dA, ZY_T *dB, ZY_T dr) {
    (void)dr;
    int left = side == 141, ka = left ? m : n, ld = zy_ld(layout, m, n);
    /* S = op(A)^-T dX in place; d op(A) = -S X^T (left) or -X^T S (right); dB = alpha S */
    ZY_B(trsm)(layout, side, uplo, transa != 111 ? 111 : 112, diag, m, n, 1, A, lda, dB, ldb);
    if (dA) {
        ZY_T *X = ZY_P(mcopy)(layout, m, n, B, ldb), *G = ZY_P(mtemp)(ka, ka);
        ZY_B(trsm)(layout, side, uplo, transa, diag, m, n, alpha, A, lda, X, ld);
        if (left)
            ZY_B(gemm)(layout, 111, 112, m, m, n, -1, dB, ldb, X, ld, 0, G, ka);
        else
            ZY_B(gemm)(layout, 112, 111, n, n, m, -1, X, ld, dB, ldb, 0, G, ka);
        ZY_P(tri_fold)(layout, uplo, transa, diag, ka, G, dA, lda);
        free(X), free(G);
    }
    ZY_P(mscale)(layout, m, n, alpha, dB, ldb);
}
