/* LAPACK's symmetric eigendecomposition (syev, syevd) as a matrix-level rule, for one
   precision: included by blas_runtime.c inside its per-precision part.

   syev/syevd read the stored triangle of the symmetric n x n A and write its eigenvalues
   w (ascending) and, for jobz 'V', the orthonormal eigenvectors V over the whole of A (for
   jobz 'N' the stored triangle is destroyed and the other one left alone). With S the
   symmetric tangent of A, M = V^T S V and F_ij = 1/(w_j - w_i) off the diagonal:
     forward  dw = diag(M),  dV = V (F o M);
     reverse  G = V (diag(wbar) + F o (V^T Vbar)) V^T, folded onto the stored triangle
              (G_ij + G_ji off the diagonal, G_ii on it).
   Degenerate eigenvalues: the eigenvectors of a repeated eigenvalue are not a function of
   A, and F is infinite there; a term whose coupling M_ij (or (V^T Vbar)_ij) is exactly
   zero is taken as zero, so that functions of the eigenvalues alone (and eigenvectors
   the result does not depend on) keep their derivative, and any other gives inf/NaN
   rather than a number. The eigenvectors are those the same routine computes again in
   the derivative (syev and syevd may pick different signs). A workspace query (lwork or
   liwork -1) computes nothing, and its derivative does nothing; a decomposition that
   fails (info > 0) gives NaN derivatives. The workspace's shadow is zeroed. */

/* V (packed n x n, the eigenvectors) and w of the symmetric A's stored triangle, by the
   routine the program called (divide = syevd); NULL when it fails */
static ZY_T *ZY_P(eig_of)(int divide, int uplo, int n, const ZY_T *A, int lda, ZY_T *w) {
    ZY_T *V = ZY_P(mcopy)(102, n, n, A, lda), query = 0;
    char jobz = 'V', u = uplo == 121 ? 'U' : 'L';
    int ld = n > 0 ? n : 1, info = 0, lwork = -1, liwork = -1, iquery = 0;
    if (divide)
        ZY_F(syevd)(&jobz, &u, &n, V, &ld, w, &query, &lwork, &iquery, &liwork, &info);
    else
        ZY_F(syev)(&jobz, &u, &n, V, &ld, w, &query, &lwork, &info);
    lwork = (int)query > 1 ? (int)query : 1;
    liwork = iquery > 1 ? iquery : 1;
    ZY_T *work = malloc((size_t)lwork * sizeof(ZY_T));
    int *iwork = malloc((size_t)liwork * sizeof(int));
    if (divide)
        ZY_F(syevd)(&jobz, &u, &n, V, &ld, w, work, &lwork, iwork, &liwork, &info);
    else
        ZY_F(syev)(&jobz, &u, &n, V, &ld, w, work, &lwork, &info);
    free(work), free(iwork);
    if (info != 0) {
        free(V);
        return NULL;
    }
    return V;
}

/* element (i, j) of a symmetric matrix stored in one triangle of D */
static ZY_T ZY_P(sym_at)(int uplo, const ZY_T *D, int ld, int i, int j) {
    return zy_in_triangle(uplo, i, j) ? D[i + (long)j * ld] : D[j + (long)i * ld];
}

/* K = F o K off the diagonal (zero where K is exactly zero), the diagonal set to d (or left) */
static void ZY_P(eig_couple)(int n, const ZY_T *w, ZY_T *K, const ZY_T *d) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            ZY_T *p = K + i + (long)j * n;
            if (i == j)
                *p = d ? d[i] : *p;
            else
                *p = *p == 0 ? 0 : *p / (w[j] - w[i]);
        }
}

/* the derivative's part for syev and syevd, every lane's (lwork < 0 or liwork < 0: a
   workspace query, no call here): A decomposed once for all lanes */
static void ZY_P(eig_fwd_lanes)(int divide, int jobz, int uplo, int n, const ZY_T *A, int lda, int lwork, int lanes,
                                ZY_T *const *dA, ZY_T *const *dw, ZY_T *const *dwork) {
    int ld = n > 0 ? n : 1;
    ZY_T *w = ZY_P(mtemp)(n, 1);
    ZY_T *V = ZY_P(lanes_present)(lanes, dA) ? ZY_P(eig_of)(divide, uplo, n, A, lda, w) : NULL;
    ZY_T *S = V ? ZY_P(mtemp)(n, n) : NULL, *T = V ? ZY_P(mtemp)(n, n) : NULL;
    for (int k = 0; k < lanes; k++) {
        if (dA[k] && V) {
            for (int j = 0; j < n; j++)
                for (int i = 0; i < n; i++)
                    S[i + (long)j * ld] = ZY_P(sym_at)(uplo, dA[k], lda, i, j);
            ZY_B(gemm)(102, 112, 111, n, n, n, 1, V, ld, S, ld, 0, T, ld); /* V^T S */
            ZY_B(gemm)(102, 111, 111, n, n, n, 1, T, ld, V, ld, 0, S, ld); /* M = V^T S V */
            for (int i = 0; i < n && dw[k]; i++)
                dw[k][i] = S[i + (long)i * ld];
            if (jobz) { /* dV = V (F o M) over the whole of A */
                ZY_P(eig_couple)(n, w, S, NULL);
                for (int i = 0; i < n; i++)
                    S[i + (long)i * ld] = 0;
                ZY_B(gemm)(102, 111, 111, n, n, n, 1, V, ld, S, ld, 0, dA[k], lda);
            } else { /* the stored triangle is destroyed: no tangent */
                for (int j = 0; j < n; j++)
                    for (int i = 0; i < n; i++)
                        if (zy_in_triangle(uplo, i, j))
                            dA[k][i + (long)j * lda] = 0;
            }
        } else if (dA[k]) { /* failed */
            ZY_P(nan_fill)(n, n, dA[k], lda);
            for (int i = 0; i < n && dw[k]; i++)
                dw[k][i] = (ZY_T)NAN;
        } else {
            for (int i = 0; i < n && dw[k]; i++)
                dw[k][i] = 0;
        }
        for (int i = 0; i < lwork && dwork[k]; i++)
            dwork[k][i] = 0;
    }
    free(w), free(V), free(S), free(T);
}

static void ZY_P(eig_fwd)(int divide, int jobz, int uplo, int n, const ZY_T *A, int lda, int lwork, ZY_T *dA,
                          ZY_T *dw, ZY_T *dwork) {
    ZY_P(eig_fwd_lanes)(divide, jobz, uplo, n, A, lda, lwork, 1, &dA, &dw, &dwork);
}

static void ZY_P(eig_rev_lanes)(int divide, int jobz, int uplo, int n, const ZY_T *A, int lda, int lwork, int lanes,
                                ZY_T *const *dA, ZY_T *const *dw, ZY_T *const *dwork) {
    int ld = n > 0 ? n : 1;
    ZY_T *w = NULL, *V = NULL, *K = NULL, *T = NULL, *zeros = NULL;
    if (ZY_P(lanes_present)(lanes, dA)) { /* A (kept at the call) decomposed once */
        w = ZY_P(mtemp)(n, 1), V = ZY_P(eig_of)(divide, uplo, n, A, lda, w);
        K = ZY_P(mtemp)(n, n), T = ZY_P(mtemp)(n, n), zeros = ZY_P(mtemp)(n, 1);
    }
    for (int k = 0; k < lanes; k++) {
        if (dA[k]) {
            if (V && jobz) /* K = V^T Vbar */
                ZY_B(gemm)(102, 112, 111, n, n, n, 1, V, ld, dA[k], lda, 0, K, ld);
            else
                memset(K, 0, (size_t)ld * ld * sizeof(ZY_T));
            if (V) {
                ZY_P(eig_couple)(n, w, K, dw[k] ? dw[k] : zeros);
                ZY_B(gemm)(102, 111, 111, n, n, n, 1, V, ld, K, ld, 0, T, ld); /* V K */
                ZY_B(gemm)(102, 111, 112, n, n, n, 1, T, ld, V, ld, 0, K, ld); /* G = V K V^T */
            }
            for (int j = 0; j < n; j++)
                for (int i = 0; i < n; i++) {
                    ZY_T g = !V ? (ZY_T)NAN : i == j ? K[i + (long)i * ld] : K[i + (long)j * ld] + K[j + (long)i * ld];
                    if (zy_in_triangle(uplo, i, j))
                        dA[k][i + (long)j * lda] = g;
                    else if (jobz) /* overwritten by V, not read: no adjoint */
                        dA[k][i + (long)j * lda] = 0;
                }
        }
        for (int i = 0; i < n && dw[k]; i++)
            dw[k][i] = 0;
        for (int i = 0; i < lwork && dwork[k]; i++)
            dwork[k][i] = 0;
    }
    free(w), free(V), free(K), free(T), free(zeros);
}

static void ZY_P(eig_rev)(int divide, int jobz, int uplo, int n, const ZY_T *A, int lda, int lwork, ZY_T *dA,
                          ZY_T *dw, ZY_T *dwork) {
    ZY_P(eig_rev_lanes)(divide, jobz, uplo, n, A, lda, lwork, 1, &dA, &dw, &dwork);
}

/* ---- syev ---------------------------------------------------------------------------- */
ZY_API void *ZY_P(syev_save)(int which, int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                             const ZY_T *work, int lwork, const int *info) {
    (void)which, (void)jobz, (void)uplo, (void)w, (void)work, (void)info;
    return zy_copy_span(A, lwork < 0 ? 0 : zy_mspan(layout, n, n, lda), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(syev_fwd_lanes)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                                 const ZY_T *work, int lwork, const int *info, int lanes, ZY_T *const *d) {
    (void)layout, (void)w, (void)work, (void)info;
    if (lwork >= 0)
        ZY_P(eig_fwd_lanes)(0, jobz, uplo, n, A, lda, lwork, lanes, d, d + lanes, d + 2 * lanes);
    return 0;
}

ZY_API ZY_T ZY_P(syev_fwd)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                           const ZY_T *work, int lwork, const int *info, ZY_T *dA, ZY_T *dw, ZY_T *dwork) {
    (void)layout, (void)w, (void)work, (void)info;
    if (lwork >= 0)
        ZY_P(eig_fwd)(0, jobz, uplo, n, A, lda, lwork, dA, dw, dwork);
    return 0;
}

ZY_API void ZY_P(syev_rev_lanes)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                                 const ZY_T *work, int lwork, int info, int lanes, ZY_T *const *d) {
    (void)layout, (void)w, (void)work, (void)info;
    if (lwork >= 0)
        ZY_P(eig_rev_lanes)(0, jobz, uplo, n, A, lda, lwork, lanes, d, d + lanes, d + 2 * lanes);
}

ZY_API void ZY_P(syev_rev)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                           const ZY_T *work, int lwork, int info, ZY_T *dA, ZY_T *dw, ZY_T *dwork, ZY_T dr) {
    (void)layout, (void)w, (void)work, (void)info, (void)dr;
    if (lwork >= 0)
        ZY_P(eig_rev)(0, jobz, uplo, n, A, lda, lwork, dA, dw, dwork);
}

/* ---- syevd --------------------------------------------------------------------------- */
ZY_API void *ZY_P(syevd_save)(int which, int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                              const ZY_T *work, int lwork, const int *iwork, int liwork, const int *info) {
    (void)which, (void)jobz, (void)uplo, (void)w, (void)work, (void)iwork, (void)info;
    return zy_copy_span(A, lwork < 0 || liwork < 0 ? 0 : zy_mspan(layout, n, n, lda), sizeof(ZY_T));
}

ZY_API ZY_T ZY_P(syevd_fwd_lanes)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                                  const ZY_T *work, int lwork, const int *iwork, int liwork, const int *info, int lanes,
                                  ZY_T *const *d) {
    (void)layout, (void)w, (void)work, (void)iwork, (void)info;
    if (lwork >= 0 && liwork >= 0)
        ZY_P(eig_fwd_lanes)(1, jobz, uplo, n, A, lda, lwork, lanes, d, d + lanes, d + 2 * lanes);
    return 0;
}

ZY_API ZY_T ZY_P(syevd_fwd)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                            const ZY_T *work, int lwork, const int *iwork, int liwork, const int *info, ZY_T *dA,
                            ZY_T *dw, ZY_T *dwork) {
    (void)layout, (void)w, (void)work, (void)iwork, (void)info;
    if (lwork >= 0 && liwork >= 0)
        ZY_P(eig_fwd)(1, jobz, uplo, n, A, lda, lwork, dA, dw, dwork);
    return 0;
}

ZY_API void ZY_P(syevd_rev_lanes)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                                  const ZY_T *work, int lwork, const int *iwork, int liwork, int info, int lanes,
                                  ZY_T *const *d) {
    (void)layout, (void)w, (void)work, (void)iwork, (void)info;
    if (lwork >= 0 && liwork >= 0)
        ZY_P(eig_rev_lanes)(1, jobz, uplo, n, A, lda, lwork, lanes, d, d + lanes, d + 2 * lanes);
}

ZY_API void ZY_P(syevd_rev)(int layout, int jobz, int uplo, int n, const ZY_T *A, int lda, const ZY_T *w,
                            const ZY_T *work, int lwork, const int *iwork, int liwork, int info, ZY_T *dA,
                            ZY_T *dw, ZY_T *dwork, ZY_T dr) {
    (void)layout, (void)w, (void)work, (void)iwork, (void)info, (void)dr;
    if (lwork >= 0 && liwork >= 0)
        ZY_P(eig_rev)(1, jobz, uplo, n, A, lda, lwork, dA, dw, dwork);
}
