/* LAPACK's least squares by the SVD (gelsd) as a matrix-level rule, for one precision:
   included by blas_runtime.c inside its per-precision part (after lapack_svd.h, whose
   svd_of and ratio it uses).

   gelsd overwrites the first n rows of B (ldb x nrhs, ldb >= max(m, n)) with X = A^+ B,
   the minimum-norm least-squares solution of the m x n A X = B, writes the singular values
   s of A and its numerical rank, and destroys A. The derivative is that of X = A^+ B for
   a full-rank A (rank min(m, n)): with A = U S V^T (thin), A^+ = V S^-1 U^T, R = B - A X,
   P = A^+ A^+^T = V S^-2 V^T, N = I - A^+ A = I - V V^T and G = A^+^T X,
     forward  dX = A^+ (dB - dA X) + P dA^T R + N dA^T G,   ds = diag(U^T dA V);
     reverse  Bbar = A^+^T Xbar,
              Abar = -Bbar X^T + R (P Xbar)^T + G (N Xbar)^T + U diag(sbar) V^T.
   (R is zero for m <= n, N for m >= n.) A rank-deficient A (the routine's own test,
   s_min <= rcond s_max, with rcond < 0 meaning machine precision) has no derivative: the
   tangents/adjoints are NaN. For m > n the rows n..m-1 of B hold the residual in a basis
   of its own (not unique): NaN tangents, and a nonzero adjoint on them makes the inputs'
   NaN. The workspace query (lwork -1) does nothing; the workspace's shadow is zeroed. */

/* Y = op(V) diag(1/s)^p M-like products are spelled out below with these two helpers */
static void ZY_P(scale_rows)(int rows, int cols, ZY_T *M, int ld, const ZY_T *s, int power) {
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            ZY_T *p = M + i + (long)j * ld;
            for (int q = 0; q < power; q++)
                *p = ZY_P(ratio)(*p, s[i]);
        }
}

/* the factors of the pseudo-inverse: U (m x k), s, V^T (k x n) of A; NULL when A is rank
   deficient by gelsd's test or the SVD fails */
static ZY_T *ZY_P(pinv_factors)(int m, int n, const ZY_T *A, int lda, ZY_T rcond, ZY_T *s, ZY_T **VT) {
    int k = m < n ? m : n;
    ZY_T *U = ZY_P(svd_of)(0, m, n, A, lda, s, VT);
    ZY_T eps = sizeof(ZY_T) == sizeof(double) ? 2.220446049250313e-16 : 1.1920929e-07f;
    ZY_T cut = (rcond < 0 ? eps : rcond) * (k > 0 ? s[0] : 0);
    if (U && k > 0 && !(s[k - 1] > cut)) {
        free(U), free(*VT);
        *VT = NULL;
        return NULL;
    }
    return U;
}

/* X = A^+ B (n x nrhs, leading dimension n) from the factors and the m x nrhs B */
static ZY_T *ZY_P(pinv_apply)(int m, int n, int nrhs, const ZY_T *U, const ZY_T *s, const ZY_T *VT, const ZY_T *B,
                              int ldb) {
    int k = m < n ? m : n, ldm = m > 0 ? m : 1, ldk = k > 0 ? k : 1, ldn = n > 0 ? n : 1;
    ZY_T *T = ZY_P(mtemp)(k, nrhs), *X = ZY_P(mtemp)(n, nrhs);
    ZY_B(gemm)(102, 112, 111, k, nrhs, m, 1, U, ldm, B, ldb, 0, T, ldk);
    ZY_P(scale_rows)(k, nrhs, T, ldk, s, 1);
    ZY_B(gemm)(102, 112, 111, n, nrhs, k, 1, VT, ldk, T, ldk, 0, X, ldn);
    free(T);
    return X;
}

/* the output shadows set to NaN (no derivative) */
static void ZY_P(lstsq_nan)(int m, int n, int nrhs, ZY_T *dA, int lda, ZY_T *dB, int ldb, ZY_T *ds) {
    int k = m < n ? m : n, rows = m > n ? m : n;
    if (dA)
        ZY_P(nan_fill)(m, n, dA, lda);
    if (dB)
        ZY_P(nan_fill)(rows, nrhs, dB, ldb);
    for (int i = 0; i < k && ds; i++)
        ds[i] = (ZY_T)NAN;
}

ZY_API void *ZY_P(gelsd_save)(int which, int layout, int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B,
                              int ldb, const ZY_T *s, ZY_T rcond, const int *rank, const ZY_T *work, int lwork,
                              const int *iwork, const int *info) {
    (void)s, (void)rcond, (void)rank, (void)work, (void)iwork, (void)info;
    if (lwork < 0)
        return zy_copy_span(A, 0, sizeof(ZY_T));
    return which == 4 ? zy_copy_span(A, zy_mspan(layout, m, n, lda), sizeof(ZY_T))
                      : zy_copy_span(B, zy_mspan(layout, m, nrhs, ldb), sizeof(ZY_T));
}

/* one lane's tangents, given the pseudo-inverse's factors U, w, VT of A and X = A^+ B */
static void ZY_P(gelsd_fwd_lane)(int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                                 const ZY_T *U, const ZY_T *w, const ZY_T *VT, const ZY_T *X, ZY_T *dA, ZY_T *dB,
                                 ZY_T *ds) {
    int k = m < n ? m : n, ldm = m > 0 ? m : 1, ldk = k > 0 ? k : 1, ldn = n > 0 ? n : 1;
    ZY_T *rhs = ZY_P(mtemp)(m, nrhs);
    if (dB)
        for (int j = 0; j < nrhs; j++)
            for (int i = 0; i < m; i++)
                rhs[i + (long)j * ldm] = dB[i + (long)j * ldb];
    if (dA) /* dB - dA X */
        ZY_B(gemm)(102, 111, 111, m, nrhs, n, -1, dA, lda, X, ldn, 1, rhs, ldm);
    ZY_T *dX = ZY_P(pinv_apply)(m, n, nrhs, U, w, VT, rhs, ldm);
    if (dA) {
        ZY_T *R = ZY_P(mcopy)(102, m, nrhs, B, ldb), *G = ZY_P(mtemp)(m, nrhs), *T = ZY_P(mtemp)(n, nrhs);
        ZY_T *Y = ZY_P(mtemp)(k, nrhs), *P = ZY_P(mtemp)(k, k);
        ZY_B(gemm)(102, 111, 111, m, nrhs, n, -1, A, lda, X, ldn, 1, R, ldm); /* R = B - A X */
        ZY_B(gemm)(102, 112, 111, n, nrhs, m, 1, dA, lda, R, ldm, 0, T, ldn); /* dA^T R */
        ZY_B(gemm)(102, 111, 111, k, nrhs, n, 1, VT, ldk, T, ldn, 0, Y, ldk); /* P (...) */
        ZY_P(scale_rows)(k, nrhs, Y, ldk, w, 2);
        ZY_B(gemm)(102, 112, 111, n, nrhs, k, 1, VT, ldk, Y, ldk, 1, dX, ldn);
        ZY_B(gemm)(102, 111, 111, k, nrhs, n, 1, VT, ldk, X, ldn, 0, Y, ldk); /* G = U S^-1 V^T X */
        ZY_P(scale_rows)(k, nrhs, Y, ldk, w, 1);
        ZY_B(gemm)(102, 111, 111, m, nrhs, k, 1, U, ldm, Y, ldk, 0, G, ldm);
        ZY_B(gemm)(102, 112, 111, n, nrhs, m, 1, dA, lda, G, ldm, 0, T, ldn); /* N dA^T G */
        ZY_B(gemm)(102, 111, 111, k, nrhs, n, 1, VT, ldk, T, ldn, 0, Y, ldk);
        ZY_B(gemm)(102, 112, 111, n, nrhs, k, -1, VT, ldk, Y, ldk, 1, T, ldn);
        for (long i = 0; i < (long)n * nrhs; i++)
            dX[i] += T[i];
        if (ds) { /* ds = diag(U^T dA V) */
            ZY_T *AV = ZY_P(mtemp)(m, k);
            ZY_B(gemm)(102, 111, 112, m, k, n, 1, dA, lda, VT, ldk, 0, AV, ldm);
            ZY_B(gemm)(102, 112, 111, k, k, m, 1, U, ldm, AV, ldm, 0, P, ldk);
            for (int i = 0; i < k; i++)
                ds[i] = P[i + (long)i * ldk];
            free(AV);
        }
        for (int j = 0; j < n; j++) /* A is destroyed */
            for (int i = 0; i < m; i++)
                dA[i + (long)j * lda] = 0;
        free(R), free(G), free(T), free(Y), free(P);
    } else {
        for (int i = 0; i < k && ds; i++)
            ds[i] = 0;
    }
    if (dB)
        for (int j = 0; j < nrhs; j++)
            for (int i = 0; i < (m > n ? m : n); i++)
                dB[i + (long)j * ldb] = i < n ? dX[i + (long)j * ldn] : (ZY_T)NAN;
    free(rhs), free(dX);
}

/* A's SVD and X = A^+ B once for every lane */
ZY_API ZY_T ZY_P(gelsd_fwd_lanes)(int layout, int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                                  const ZY_T *s, ZY_T rcond, const int *rank, const ZY_T *work, int lwork,
                                  const int *iwork, const int *info, int lanes, ZY_T *const *d) {
    (void)layout, (void)s, (void)rank, (void)work, (void)iwork, (void)info;
    if (lwork < 0)
        return 0;
    ZY_T *const *dA = d, *const *dB = d + lanes, *const *ds = d + 2 * lanes, *const *dwork = d + 3 * lanes;
    int k = m < n ? m : n;
    ZY_T *w = ZY_P(mtemp)(k, 1), *VT = NULL, *U = ZY_P(pinv_factors)(m, n, A, lda, rcond, w, &VT);
    ZY_T *X = U ? ZY_P(pinv_apply)(m, n, nrhs, U, w, VT, B, ldb) : NULL;
    for (int l = 0; l < lanes; l++) {
        for (int i = 0; i < lwork && dwork[l]; i++)
            dwork[l][i] = 0;
        if (U)
            ZY_P(gelsd_fwd_lane)(m, n, nrhs, A, lda, B, ldb, U, w, VT, X, dA[l], dB[l], ds[l]);
        else
            ZY_P(lstsq_nan)(m, n, nrhs, dA[l], lda, dB[l], ldb, ds[l]);
    }
    free(w), free(U), free(VT), free(X);
    return 0;
}

ZY_API ZY_T ZY_P(gelsd_fwd)(int layout, int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                            const ZY_T *s, ZY_T rcond, const int *rank, const ZY_T *work, int lwork, const int *iwork,
                            const int *info, ZY_T *dA, ZY_T *dB, ZY_T *ds, ZY_T *dwork) {
    ZY_T *d[4] = {dA, dB, ds, dwork};
    return ZY_P(gelsd_fwd_lanes)(layout, m, n, nrhs, A, lda, B, ldb, s, rcond, rank, work, lwork, iwork, info, 1, d);
}

/* one lane's adjoints, given the pseudo-inverse's factors of the A kept at the call (U
   NULL: rank deficient) */
static void ZY_P(gelsd_rev_lane)(int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                                 const ZY_T *U, const ZY_T *w, const ZY_T *VT, int lwork, ZY_T *dA, ZY_T *dB,
                                 ZY_T *ds, ZY_T *dwork) {
    int k = m < n ? m : n, ldm = m > 0 ? m : 1, ldk = k > 0 ? k : 1, ldn = n > 0 ? n : 1, rows = m > n ? m : n;
    for (int i = 0; i < lwork && dwork; i++)
        dwork[i] = 0;
    int residual = 0; /* an adjoint on the rows holding the residual's coordinates */
    for (int j = 0; j < nrhs && dB; j++)
        for (int i = n; i < m; i++)
            residual |= dB[i + (long)j * ldb] != 0;
    if (!U || residual) {
        ZY_P(lstsq_nan)(m, n, nrhs, dA, lda, dB, ldb, NULL);
        for (int i = 0; i < k && ds; i++)
            ds[i] = 0;
        return;
    }
    ZY_T *Xb = ZY_P(mtemp)(n, nrhs), *Bb = ZY_P(mtemp)(m, nrhs), *Y = ZY_P(mtemp)(k, nrhs);
    if (dB)
        for (int j = 0; j < nrhs; j++)
            for (int i = 0; i < n; i++)
                Xb[i + (long)j * ldn] = dB[i + (long)j * ldb];
    ZY_B(gemm)(102, 111, 111, k, nrhs, n, 1, VT, ldk, Xb, ldn, 0, Y, ldk); /* V^T Xbar */
    ZY_P(scale_rows)(k, nrhs, Y, ldk, w, 1);
    ZY_B(gemm)(102, 111, 111, m, nrhs, k, 1, U, ldm, Y, ldk, 0, Bb, ldm); /* Bbar = A^+^T Xbar */
    if (dA) {
        ZY_T *X = ZY_P(pinv_apply)(m, n, nrhs, U, w, VT, B, ldb), *R = ZY_P(mcopy)(102, m, nrhs, B, ldb);
        ZY_T *PX = ZY_P(mtemp)(n, nrhs), *NX = ZY_P(mcopy)(102, n, nrhs, Xb, ldn), *G = ZY_P(mtemp)(m, nrhs);
        ZY_T *Z = ZY_P(mtemp)(k, nrhs);
        ZY_B(gemm)(102, 111, 111, m, nrhs, n, -1, A, lda, X, ldn, 1, R, ldm); /* R = B - A X */
        ZY_P(scale_rows)(k, nrhs, Y, ldk, w, 1);                               /* S^-2 V^T Xbar */
        ZY_B(gemm)(102, 112, 111, n, nrhs, k, 1, VT, ldk, Y, ldk, 0, PX, ldn); /* P Xbar */
        ZY_B(gemm)(102, 111, 111, k, nrhs, n, 1, VT, ldk, Xb, ldn, 0, Z, ldk);
        ZY_B(gemm)(102, 112, 111, n, nrhs, k, -1, VT, ldk, Z, ldk, 1, NX, ldn); /* N Xbar */
        ZY_B(gemm)(102, 111, 111, k, nrhs, n, 1, VT, ldk, X, ldn, 0, Z, ldk);
        ZY_P(scale_rows)(k, nrhs, Z, ldk, w, 1);
        ZY_B(gemm)(102, 111, 111, m, nrhs, k, 1, U, ldm, Z, ldk, 0, G, ldm); /* G = A^+^T X */
        ZY_B(gemm)(102, 111, 112, m, n, nrhs, -1, Bb, ldm, X, ldn, 0, dA, lda);
        ZY_B(gemm)(102, 111, 112, m, n, nrhs, 1, R, ldm, PX, ldn, 1, dA, lda);
        ZY_B(gemm)(102, 111, 112, m, n, nrhs, 1, G, ldm, NX, ldn, 1, dA, lda);
        if (ds) { /* + U diag(sbar) V^T */
            ZY_T *US = ZY_P(mcopy)(102, m, k, U, ldm);
            for (int j = 0; j < k; j++)
                for (int i = 0; i < m; i++)
                    US[i + (long)j * ldm] *= ds[j];
            ZY_B(gemm)(102, 111, 111, m, n, k, 1, US, ldm, VT, ldk, 1, dA, lda);
            free(US);
        }
        free(X), free(R), free(PX), free(NX), free(G), free(Z);
    }
    if (dB) /* the rows read are B's m; those beyond (n > m) were only written */
        for (int j = 0; j < nrhs; j++)
            for (int i = 0; i < rows; i++)
                dB[i + (long)j * ldb] = i < m ? Bb[i + (long)j * ldm] : 0;
    for (int i = 0; i < k && ds; i++)
        ds[i] = 0;
    free(Xb), free(Bb), free(Y);
}

/* the kept A's SVD once for every lane */
ZY_API void ZY_P(gelsd_rev_lanes)(int layout, int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                                  const ZY_T *s, ZY_T rcond, const int *rank, const ZY_T *work, int lwork,
                                  const int *iwork, int info, int lanes, ZY_T *const *d) {
    (void)layout, (void)s, (void)rank, (void)work, (void)iwork, (void)info;
    if (lwork < 0)
        return;
    ZY_T *const *dA = d, *const *dB = d + lanes, *const *ds = d + 2 * lanes, *const *dwork = d + 3 * lanes;
    int k = m < n ? m : n;
    ZY_T *w = ZY_P(mtemp)(k, 1), *VT = NULL, *U = ZY_P(pinv_factors)(m, n, A, lda, rcond, w, &VT);
    for (int l = 0; l < lanes; l++)
        ZY_P(gelsd_rev_lane)(m, n, nrhs, A, lda, B, ldb, U, w, VT, lwork, dA[l], dB[l], ds[l], dwork[l]);
    free(w), free(U), free(VT);
}

ZY_API void ZY_P(gelsd_rev)(int layout, int m, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                            const ZY_T *s, ZY_T rcond, const int *rank, const ZY_T *work, int lwork, const int *iwork,
                            int info, ZY_T *dA, ZY_T *dB, ZY_T *ds, ZY_T *dwork, ZY_T dr) {
    (void)dr;
    ZY_T *d[4] = {dA, dB, ds, dwork};
    ZY_P(gelsd_rev_lanes)(layout, m, n, nrhs, A, lda, B, ldb, s, rcond, rank, work, lwork, iwork, info, 1, d);
}
