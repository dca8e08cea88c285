/* LAPACK's singular value decomposition (gesdd) as a matrix-level rule, for one precision:
   included by blas_runtime.c inside its per-precision part.

   gesdd writes the singular values s (descending) of the m x n A and, for jobz 'S', the
   thin U (m x k) and V^T (k x n), k = min(m, n); for 'A' the full U (m x m) and V^T (n x n);
   for 'N' neither. A is destroyed. With P = U^T dA V, S = diag(s) and F_ij = 1/(s_j^2 -
   s_i^2) off the diagonal (Townsend, "Differentiating the singular value decomposition"):
     forward  ds = diag(P),
              dU = U (F o (P S + S P^T)) + (dA V - U P) S^-1,
              dV = V (F o (S P + P^T S)) + (dA^T U - V P^T) S^-1;
     reverse  Abar = U [J S + diag(sbar) + S K] V^T + (Ubar - U U^T Ubar) S^-1 V^T
                     + U S^-1 (Vbar^T - V^T Vbar ... ) with J = F o (U^T Ubar - Ubar^T U),
                     K = F o (V^T Vbar - Vbar^T V) (written out in gesdd_rev).
   The derivative exists for distinct, nonzero singular values: as for the eigenvectors
   (lapack_eigen.h) a term whose coupling or numerator is exactly zero is zero (so the
   singular values alone keep their derivative at a repeated or zero one), any other gives
   inf/NaN. jobz 'A' on a rectangular matrix: the columns of U (rows of V^T) beyond k span
   the complement, which has no unique basis: their tangents are NaN, and a nonzero adjoint
   on them makes A's NaN. jobz 'O' (vectors written over A) has no rule: its derivatives
   are NaN. The workspace query (lwork -1) does nothing; the workspace's shadow is zeroed. */

/* U, s, V^T of A by gesdd with jobz 'A' (full) or 'S'; NULL U when it fails */
static ZY_T *ZY_P(svd_of)(int full, int m, int n, const ZY_T *A, int lda, ZY_T *s, ZY_T **VT) {
    int k = m < n ? m : n, ucols = full ? m : k, vrows = full ? n : k;
    int ldu = m > 0 ? m : 1, ldvt = vrows > 0 ? vrows : 1, lda2 = m > 0 ? m : 1, lwork = -1, info = 0;
    char job = full ? 'A' : 'S';
    ZY_T *C = ZY_P(mcopy)(102, m, n, A, lda), *U = ZY_P(mtemp)(m, ucols), query = 0;
    *VT = ZY_P(mtemp)(vrows, n);
    int *iwork = malloc((size_t)(8 * (k > 0 ? k : 1)) * sizeof(int));
    ZY_F(gesdd)(&job, &m, &n, C, &lda2, s, U, &ldu, *VT, &ldvt, &query, &lwork, iwork, &info);
    lwork = (int)query > 1 ? (int)query : 1;
    ZY_T *work = malloc((size_t)lwork * sizeof(ZY_T));
    ZY_F(gesdd)(&job, &m, &n, C, &lda2, s, U, &ldu, *VT, &ldvt, work, &lwork, iwork, &info);
    free(C), free(work), free(iwork);
    if (info != 0) {
        free(U), free(*VT);
        *VT = NULL;
        return NULL;
    }
    return U;
}

/* x / y, zero when x is exactly zero (see the header comment) */
static ZY_T ZY_P(ratio)(ZY_T x, ZY_T y) { return x == 0 ? 0 : x / y; }

/* the job's output shapes: columns of U and rows of V^T the call writes (0 for 'N') */
static void ZY_P(svd_shapes)(int jobz, int m, int n, int *ucols, int *vrows) {
    int k = m < n ? m : n;
    *ucols = jobz == 'A' ? m : jobz == 'S' ? k : 0;
    *vrows = jobz == 'A' ? n : jobz == 'S' ? k : 0;
}

/* the shadows of the outputs set to v (NaN for no derivative, 0 once consumed) */
static void ZY_P(svd_fill)(int jobz, int m, int n, ZY_T v, ZY_T *ds, ZY_T *dU, int ldu, ZY_T *dVT, int ldvt) {
    int k = m < n ? m : n, ucols, vrows;
    ZY_P(svd_shapes)(jobz, m, n, &ucols, &vrows);
    for (int i = 0; i < k && ds; i++)
        ds[i] = v;
    for (int j = 0; j < ucols && dU; j++)
        for (int i = 0; i < m; i++)
            dU[i + (long)j * ldu] = v;
    for (int j = 0; j < n && dVT; j++)
        for (int i = 0; i < vrows; i++)
            dVT[i + (long)j * ldvt] = v;
}

ZY_API void *ZY_P(gesdd_save)(int which, int layout, int jobz, int m, int n, const ZY_T *A, int lda, const ZY_T *s,
                              const ZY_T *U, int ldu, const ZY_T *VT, int ldvt, const ZY_T *work, int lwork,
                              const int *iwork, const int *info) {
    (void)which, (void)jobz, (void)s, (void)U, (void)ldu, (void)VT, (void)ldvt, (void)work, (void)iwork, (void)info;
    return zy_copy_span(A, lwork < 0 ? 0 : zy_mspan(layout, m, n, lda), sizeof(ZY_T));
}

/* one lane's tangents, given A's SVD (Q = U, V, w = s: NULL when it failed or was not
   computed) */
static void ZY_P(gesdd_fwd_lane)(int jobz, int m, int n, int lda, int ldu, int ldvt, int lwork, const ZY_T *w,
                                 const ZY_T *Q, const ZY_T *V, ZY_T *dA, ZY_T *ds, ZY_T *dU, ZY_T *dVT, ZY_T *dwork) {
    int k = m < n ? m : n, ldk = k > 0 ? k : 1, ldm = m > 0 ? m : 1, ldn = n > 0 ? n : 1, ucols, vrows;
    ZY_P(svd_shapes)(jobz, m, n, &ucols, &vrows);
    if (!dA) {
        ZY_P(svd_fill)(jobz, m, n, 0, ds, dU, ldu, dVT, ldvt);
    } else if (!Q) { /* failed, or jobz 'O' */
        ZY_P(svd_fill)(jobz, m, n, (ZY_T)NAN, ds, dU, ldu, dVT, ldvt);
        ZY_P(nan_fill)(m, n, dA, lda);
    } else {
        int ldv = jobz == 'A' ? ldn : ldk; /* Q's V^T: rows 0..k-1 are the thin V^T */
        ZY_T *T1 = ZY_P(mtemp)(m, k), *T2 = ZY_P(mtemp)(n, k), *P = ZY_P(mtemp)(k, k);
        ZY_B(gemm)(102, 111, 112, m, k, n, 1, dA, lda, V, ldv, 0, T1, ldm); /* dA V */
        ZY_B(gemm)(102, 112, 111, n, k, m, 1, dA, lda, Q, ldm, 0, T2, ldn); /* dA^T U */
        ZY_B(gemm)(102, 112, 111, k, k, m, 1, Q, ldm, T1, ldm, 0, P, ldk);  /* P = U^T dA V */
        for (int i = 0; i < k && ds; i++)
            ds[i] = P[i + (long)i * ldk];
        if (ucols) {
            ZY_T *C = ZY_P(mtemp)(k, k);
            for (int j = 0; j < k; j++) /* dU = U (F o (P S + S P^T)) + (dA V - U P) S^-1 */
                for (int i = 0; i < k; i++) {
                    ZY_T a = P[i + (long)j * ldk] * w[j] + w[i] * P[j + (long)i * ldk];
                    C[i + (long)j * ldk] = i == j ? 0 : ZY_P(ratio)(a, w[j] * w[j] - w[i] * w[i]);
                }
            ZY_B(gemm)(102, 111, 111, m, k, k, -1, Q, ldm, P, ldk, 1, T1, ldm);
            for (int j = 0; j < k; j++)
                for (int i = 0; i < m; i++)
                    T1[i + (long)j * ldm] = ZY_P(ratio)(T1[i + (long)j * ldm], w[j]);
            ZY_B(gemm)(102, 111, 111, m, k, k, 1, Q, ldm, C, ldk, 1, T1, ldm);
            for (int j = 0; j < k; j++) /* the thin part, then NaN on the complement's basis */
                for (int i = 0; i < m; i++)
                    dU[i + (long)j * ldu] = T1[i + (long)j * ldm];
            for (int j = k; j < ucols; j++)
                for (int i = 0; i < m; i++)
                    dU[i + (long)j * ldu] = (ZY_T)NAN;
            for (int j = 0; j < k; j++) /* dV = V (F o (S P + P^T S)) + (dA^T U - V P^T) S^-1 */
                for (int i = 0; i < k; i++) {
                    ZY_T a = w[i] * P[i + (long)j * ldk] + P[j + (long)i * ldk] * w[j];
                    C[i + (long)j * ldk] = i == j ? 0 : ZY_P(ratio)(a, w[j] * w[j] - w[i] * w[i]);
                }
            ZY_B(gemm)(102, 112, 112, n, k, k, -1, V, ldv, P, ldk, 1, T2, ldn);
            for (int j = 0; j < k; j++)
                for (int i = 0; i < n; i++)
                    T2[i + (long)j * ldn] = ZY_P(ratio)(T2[i + (long)j * ldn], w[j]);
            ZY_B(gemm)(102, 112, 111, n, k, k, 1, V, ldv, C, ldk, 1, T2, ldn);
            for (int j = 0; j < n; j++) /* dV^T, then NaN on the complement's rows */
                for (int i = 0; i < vrows; i++)
                    dVT[i + (long)j * ldvt] = i < k ? T2[j + (long)i * ldn] : (ZY_T)NAN;
            free(C);
        }
        for (int j = 0; j < n; j++) /* A is destroyed */
            for (int i = 0; i < m; i++)
                dA[i + (long)j * lda] = 0;
        free(T1), free(T2), free(P);
    }
    for (int i = 0; i < lwork && dwork; i++)
        dwork[i] = 0;
}

ZY_API ZY_T ZY_P(gesdd_fwd_lanes)(int layout, int jobz, int m, int n, const ZY_T *A, int lda, const ZY_T *s,
                                  const ZY_T *U, int ldu, const ZY_T *VT, int ldvt, const ZY_T *work, int lwork,
                                  const int *iwork, const int *info, int lanes, ZY_T *const *d);

ZY_API ZY_T ZY_P(gesdd_fwd)(int layout, int jobz, int m, int n, const ZY_T *A, int lda, const ZY_T *s, const ZY_T *U,
                            int ldu, const ZY_T *VT, int ldvt, const ZY_T *work, int lwork, const int *iwork,
                            const int *info, ZY_T *dA, ZY_T *ds, ZY_T *dU, ZY_T *dVT, ZY_T *dwork) {
    ZY_T *d[5] = {dA, ds, dU, dVT, dwork};
    return ZY_P(gesdd_fwd_lanes)(layout, jobz, m, n, A, lda, s, U, ldu, VT, ldvt, work, lwork, iwork, info, 1, d);
}

/* one lane's adjoints, given the SVD of the A kept at the call (as gesdd_fwd_lane) */
static void ZY_P(gesdd_rev_lane)(int jobz, int m, int n, int lda, int ldu, int ldvt, int lwork, const ZY_T *w,
                                 const ZY_T *Q, const ZY_T *V, ZY_T *dA, ZY_T *ds, ZY_T *dU, ZY_T *dVT, ZY_T *dwork) {
    int k = m < n ? m : n, ldk = k > 0 ? k : 1, ldm = m > 0 ? m : 1, ucols, vrows;
    ZY_P(svd_shapes)(jobz, m, n, &ucols, &vrows);
    if (dA) {
        int ldv = jobz == 'A' ? (n > 0 ? n : 1) : ldk, complement = 0;
        for (int j = k; j < ucols && dU; j++) /* an adjoint on the complement's basis */
            for (int i = 0; i < m; i++)
                complement |= dU[i + (long)j * ldu] != 0;
        for (int j = 0; j < n && dVT; j++)
            for (int i = k; i < vrows; i++)
                complement |= dVT[i + (long)j * ldvt] != 0;
        if (!Q || complement) {
            ZY_P(nan_fill)(m, n, dA, lda);
        } else {
            ZY_T *Ub = ZY_P(mtemp)(m, k), *Wt = ZY_P(mtemp)(k, n); /* Ubar (thin), Vbar^T */
            ZY_T *UU = ZY_P(mtemp)(k, k), *VV = ZY_P(mtemp)(k, k), *C = ZY_P(mtemp)(k, k);
            for (int j = 0; j < k && ucols; j++)
                for (int i = 0; i < m; i++)
                    Ub[i + (long)j * ldm] = dU[i + (long)j * ldu];
            for (int j = 0; j < n && vrows; j++)
                for (int i = 0; i < k; i++)
                    Wt[i + (long)j * ldk] = dVT[i + (long)j * ldvt];
            ZY_B(gemm)(102, 112, 111, k, k, m, 1, Q, ldm, Ub, ldm, 0, UU, ldk); /* U^T Ubar */
            ZY_B(gemm)(102, 111, 112, k, k, n, 1, V, ldv, Wt, ldk, 0, VV, ldk); /* V^T Vbar */
            for (int j = 0; j < k; j++) /* C = J S + diag(sbar) + S K */
                for (int i = 0; i < k; i++) {
                    ZY_T d = w[j] * w[j] - w[i] * w[i];
                    ZY_T J = ZY_P(ratio)(UU[i + (long)j * ldk] - UU[j + (long)i * ldk], d);
                    ZY_T K = ZY_P(ratio)(VV[i + (long)j * ldk] - VV[j + (long)i * ldk], d);
                    C[i + (long)j * ldk] = i == j ? (ds ? ds[i] : 0) : J * w[j] + w[i] * K;
                }
            /* (Ubar - U U^T Ubar) S^-1 + U C, times V^T */
            ZY_B(gemm)(102, 111, 111, m, k, k, -1, Q, ldm, UU, ldk, 1, Ub, ldm);
            for (int j = 0; j < k; j++)
                for (int i = 0; i < m; i++)
                    Ub[i + (long)j * ldm] = ZY_P(ratio)(Ub[i + (long)j * ldm], w[j]);
            ZY_B(gemm)(102, 111, 111, m, k, k, 1, Q, ldm, C, ldk, 1, Ub, ldm);
            ZY_B(gemm)(102, 111, 111, m, n, k, 1, Ub, ldm, V, ldv, 0, dA, lda);
            /* + U S^-1 (Vbar^T - (V^T Vbar)^T V^T) */
            ZY_B(gemm)(102, 112, 111, k, n, k, -1, VV, ldk, V, ldv, 1, Wt, ldk);
            for (int j = 0; j < n; j++)
                for (int i = 0; i < k; i++)
                    Wt[i + (long)j * ldk] = ZY_P(ratio)(Wt[i + (long)j * ldk], w[i]);
            ZY_B(gemm)(102, 111, 111, m, n, k, 1, Q, ldm, Wt, ldk, 1, dA, lda);
            free(Ub), free(Wt), free(UU), free(VV), free(C);
        }
    }
    ZY_P(svd_fill)(jobz, m, n, 0, ds, dU, ldu, dVT, ldvt);
    for (int i = 0; i < lwork && dwork; i++)
        dwork[i] = 0;
}

/* every lane's tangents (reverse 0) or adjoints (1) by the lane functions, A (the input
   at the call, or the copy kept there) decomposed once for all lanes; d as the _lanes
   entry points pass it (A, s, U, VT, work: lanes shadows each) */
static void ZY_P(gesdd_lanes)(int reverse, int jobz, int m, int n, const ZY_T *A, int lda, int ldu, int ldvt,
                              int lwork, int lanes, ZY_T *const *d) {
    if (lwork < 0)
        return;
    ZY_T *const *dA = d, *const *ds = d + lanes, *const *dU = d + 2 * lanes, *const *dVT = d + 3 * lanes;
    ZY_T *const *dwork = d + 4 * lanes;
    int k = m < n ? m : n;
    ZY_T *w = ZY_P(mtemp)(k, 1), *V = NULL;
    ZY_T *Q = ZY_P(lanes_present)(lanes, dA) && jobz != 'O' ? ZY_P(svd_of)(jobz == 'A', m, n, A, lda, w, &V) : NULL;
    for (int l = 0; l < lanes; l++)
        (reverse ? ZY_P(gesdd_rev_lane) : ZY_P(gesdd_fwd_lane))(jobz, m, n, lda, ldu, ldvt, lwork, w, Q, V, dA[l],
                                                                 ds[l], dU[l], dVT[l], dwork[l]);
    free(w), free(Q), free(V);
}

ZY_API ZY_T ZY_P(gesdd_fwd_lanes)(int layout, int jobz, int m, int n, const ZY_T *A, int lda, const ZY_T *s,
                                  const ZY_T *U, int ldu, const ZY_T *VT, int ldvt, const ZY_T *work, int lwork,
                                  const int *iwork, const int *info, int lanes, ZY_T *const *d) {
    (void)layout, (void)s, (void)U, (void)VT, (void)work, (void)iwork, (void)info;
    ZY_P(gesdd_lanes)(0, jobz, m, n, A, lda, ldu, ldvt, lwork, lanes, d);
    return 0;
}

ZY_API void ZY_P(gesdd_rev_lanes)(int layout, int jobz, int m, int n, const ZY_T *A, int lda, const ZY_T *s,
                                  const ZY_T *U, int ldu, const ZY_T *VT, int ldvt, const ZY_T *work, int lwork,
                                  const int *iwork, int info, int lanes, ZY_T *const *d) {
    (void)layout, (void)s, (void)U, (void)VT, (void)work, (void)iwork, (void)info;
    ZY_P(gesdd_lanes)(1, jobz, m, n, A, lda, ldu, ldvt, lwork, lanes, d);
}

ZY_API void ZY_P(gesdd_rev)(int layout, int jobz, int m, int n, const ZY_T *A, int lda, const ZY_T *s, const ZY_T *U,
                            int ldu, const ZY_T *VT, int ldvt, const ZY_T *work, int lwork, const int *iwork,
                            int info, ZY_T *dA, ZY_T *ds, ZY_T *dU, ZY_T *dVT, ZY_T *dwork, ZY_T dr) {
    (void)dr;
    ZY_T *d[5] = {dA, ds, dU, dVT, dwork};
    ZY_P(gesdd_rev_lanes)(layout, jobz, m, n, A, lda, s, U, ldu, VT, ldvt, work, lwork, iwork, info, 1, d);
}
