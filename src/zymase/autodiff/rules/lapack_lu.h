/* LAPACK's LU factorization and the solves with it (getrf, getrs, gesv) as matrix-level
   rules, for one precision: included by blas_runtime.c inside its per-precision part (ZY_T,
   ZY_P, ZY_B, ZY_F and the helpers of blas_runtime_level3.h are defined there).

   getrf overwrites the m x n A with L and U, A = P L U (L m x k unit lower trapezoidal,
   U k x n upper trapezoidal, k = min(m, n), P the row interchanges ipiv records). With
   L = [L1; L2], U = [U1 U2] (L1, U1 k x k) and Ah = P^T dA in blocks Ah11, Ah12, Ah21:
     X = L1^-1 Ah11 U1^-1,  dL1 = L1 sl(X),  dU1 = u(X) U1      (sl: strictly lower, u: upper)
     dU2 = L1^-1 (Ah12 - dL1 U2)                                (when n > m)
     dL2 = (Ah21 - L2 dU1) U1^-1                                (when m > n)
   and the reverse is its transpose, step by step (getrf_rev). The solves X = op(A)^-1 B:
     forward  dX = op(A)^-1 (dB - op(dA) X),  dA = P (dL U + L dU) from the factors' tangent;
     reverse  Bbar = op(A)^-T Xbar,  Abar = -Bbar X^T (-X Bbar^T for op = T), onto the
              factors as Lbar = sl(P^T Abar U^T), Ubar = u(L^T P^T Abar).
   Nothing is inverted: every step is a triangular solve or product with the factors. The
   reverse sweep of getrf factors again the input kept at the call (as potrf's), with the
   same pivoting; gesv's uses the factors, pivots and solution kept right after the call
   (no factorization, no solve again). A singular U (info > 0, the primal call's status
   for gesv) has no derivative: the tangents/adjoints are NaN. */

/* the LU factors of the m x n A in a packed copy (leading dimension max(m, 1)), pivots in
   piv (min(m, n) of them); NULL when U is singular */
static ZY_T *ZY_P(lu_of)(int m, int n, const ZY_T *A, int lda, int *piv) {
    ZY_T *F = ZY_P(mcopy)(102, m, n, A, lda);
    int ld = m > 0 ? m : 1, info = 0;
    ZY_F(getrf)(&m, &n, F, &ld, piv, &info);
    if (info != 0) {
        free(F);
        return NULL;
    }
    return F;
}

/* the rows of the m x n packed M (leading dimension ld) interchanged as ipiv's k pivots
   say: forward (P^T M) or backward (P M) */
static void ZY_P(swap_rows)(int k, const int *ipiv, int n, ZY_T *M, int ld, int backward) {
    int one = 1, inc = backward ? -1 : 1;
    if (k > 0 && n > 0)
        ZY_F(laswp)(&n, M, &ld, &one, &k, ipiv, &inc);
}

static void ZY_P(nan_fill)(int m, int n, ZY_T *D, int ld) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            D[i + (long)j * ld] = (ZY_T)NAN;
}

/* the k x k block of packed W (leading dimension ld) split into sl(W) and u(W) */
static void ZY_P(split_lu)(int k, const ZY_T *W, int ld, ZY_T *SL, ZY_T *UP) {
    for (int j = 0; j < k; j++)
        for (int i = 0; i < k; i++) {
            ZY_T v = W[i + (long)j * ld];
            SL[i + (long)j * k] = i > j ? v : 0;
            UP[i + (long)j * k] = i > j ? 0 : v;
        }
}

/* D (m x n, leading dimension ldd) = the tangent of the packed factors of A, given the
   factors F (leading dimension ldf), their pivots and the tangent dA */
static void ZY_P(getrf_tangent)(int m, int n, const ZY_T *F, int ldf, const int *piv, const ZY_T *dA, int lda,
                                ZY_T *D, int ldd) {
    int k = m < n ? m : n, ld = m > 0 ? m : 1, kk = k > 0 ? k : 1;
    ZY_T *W = ZY_P(mcopy)(102, m, n, dA, lda);
    ZY_P(swap_rows)(k, piv, n, W, ld, 0); /* P^T dA */
    ZY_B(trsm)(102, 141, 122, 111, 132, k, k, 1, F, ldf, W, ld); /* L1^-1 Ah11 */
    ZY_B(trsm)(102, 142, 121, 111, 131, k, k, 1, F, ldf, W, ld); /* ... U1^-1 = X */
    ZY_T *dL1 = ZY_P(mtemp)(k, k), *dU1 = ZY_P(mtemp)(k, k);
    ZY_P(split_lu)(k, W, ld, dL1, dU1);
    ZY_B(trmm)(102, 141, 122, 111, 132, k, k, 1, F, ldf, dL1, kk); /* L1 sl(X) */
    ZY_B(trmm)(102, 142, 121, 111, 131, k, k, 1, F, ldf, dU1, kk); /* u(X) U1 */
    if (n > k) { /* dU2 = L1^-1 (Ah12 - dL1 U2) */
        ZY_B(gemm)(102, 111, 111, k, n - k, k, -1, dL1, kk, F + (long)k * ldf, ldf, 1, W + (long)k * ld, ld);
        ZY_B(trsm)(102, 141, 122, 111, 132, k, n - k, 1, F, ldf, W + (long)k * ld, ld);
    }
    if (m > k) { /* dL2 = (Ah21 - L2 dU1) U1^-1 */
        ZY_B(gemm)(102, 111, 111, m - k, k, k, -1, F + k, ldf, dU1, kk, 1, W + k, ld);
        ZY_B(trsm)(102, 142, 121, 111, 131, m - k, k, 1, F, ldf, W + k, ld);
    }
    for (int j = 0; j < k; j++)
        for (int i = 0; i < k; i++)
            W[i + (long)j * ld] = i > j ? dL1[i + (long)j * kk] : dU1[i + (long)j * kk];
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            D[i + (long)j * ldd] = W[i + (long)j * ld];
    free(W), free(dL1), free(dU1);
}

/* D (m x n, leading dimension ldd) = the adjoint of A given D = the adjoint of its
   factors F (leading dimension ldf) */
static void ZY_P(getrf_adjoint)(int m, int n, const ZY_T *F, int ldf, const int *piv, ZY_T *D, int ldd) {
    int k = m < n ? m : n, ld = m > 0 ? m : 1, kk = k > 0 ? k : 1, zero = 1;
    for (int j = 0; j < n && zero; j++) /* the factors unused (gesv's, usually): A's adjoint is zero too */
        for (int i = 0; i < m && zero; i++)
            zero = D[i + (long)j * ldd] == 0;
    if (zero)
        return;
    ZY_T *W = ZY_P(mcopy)(102, m, n, D, ldd);
    ZY_T *Lb = ZY_P(mtemp)(k, k), *Ub = ZY_P(mtemp)(k, k);
    ZY_P(split_lu)(k, W, ld, Lb, Ub);
    if (m > k) { /* Ah21bar = L2bar U1^-T; U1bar -= L2^T Ah21bar */
        ZY_B(trsm)(102, 142, 121, 112, 131, m - k, k, 1, F, ldf, W + k, ld);
        ZY_B(gemm)(102, 112, 111, k, k, m - k, -1, F + k, ldf, W + k, ld, 1, Ub, kk);
    }
    if (n > k) { /* Ah12bar = L1^-T U2bar; L1bar -= Ah12bar U2^T */
        ZY_B(trsm)(102, 141, 122, 112, 132, k, n - k, 1, F, ldf, W + (long)k * ld, ld);
        ZY_B(gemm)(102, 111, 112, k, k, n - k, -1, W + (long)k * ld, ld, F + (long)k * ldf, ldf, 1, Lb, kk);
    }
    ZY_B(trmm)(102, 141, 122, 112, 132, k, k, 1, F, ldf, Lb, kk); /* L1^T L1bar */
    ZY_B(trmm)(102, 142, 121, 112, 131, k, k, 1, F, ldf, Ub, kk); /* U1bar U1^T */
    for (int j = 0; j < k; j++) /* Xbar = sl(L1^T L1bar) + u(U1bar U1^T) */
        for (int i = 0; i < k; i++)
            W[i + (long)j * ld] = i > j ? Lb[i + (long)j * kk] : Ub[i + (long)j * kk];
    ZY_B(trsm)(102, 141, 122, 112, 132, k, k, 1, F, ldf, W, ld); /* Ah11bar = L1^-T Xbar ... */
    ZY_B(trsm)(102, 142, 121, 112, 131, k, k, 1, F, ldf, W, ld); /* ... U1^-T */
    ZY_P(swap_rows)(k, piv, n, W, ld, 1); /* Abar = P Ahbar */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            D[i + (long)j * ldd] = W[i + (long)j * ld];
    free(W), free(Lb), free(Ub);
}

static int *ZY_P(pivots)(int m, int n) { return calloc((size_t)(m < n ? (m > 0 ? m : 1) : (n > 0 ? n : 1)), sizeof(int)); }

/* ---- getrf: A = P L U in place ----------------------------------------------------- */
ZY_API void *ZY_P(getrf_save)(int which, int layout, int m, int n, const ZY_T *A, int lda, const int *ipiv,
                              const int *info) {
    (void)which, (void)ipiv, (void)info;
    return zy_copy_span(A, zy_mspan(layout, m, n, lda), sizeof(ZY_T));
}

/* dA = the tangent of the factors of the input A, factored here (the primal's pivoting
   again): for a caller whose forward runs before the factorization (Numba's getrf) */
static void ZY_P(getrf_tangent_of_input)(int m, int n, const ZY_T *A, int lda, ZY_T *dA) {
    int *piv = ZY_P(pivots)(m, n);
    ZY_T *F = ZY_P(lu_of)(m, n, A, lda, piv);
    if (F)
        ZY_P(getrf_tangent)(m, n, F, m > 0 ? m : 1, piv, dA, lda, dA, lda);
    else
        ZY_P(nan_fill)(m, n, dA, lda);
    free(F), free(piv);
}

/* after the call (the rule's forward_after): A holds the factors, ipiv the pivots and
   *info the status the call left; nothing factored again */
ZY_API ZY_T ZY_P(getrf_fwd_lanes)(int layout, int m, int n, const ZY_T *A, int lda, const int *ipiv, const int *info,
                                  int lanes, ZY_T *const *d) {
    (void)layout;
    ZY_T *const *dA = d;
    for (int k = 0; k < lanes; k++) {
        if (!dA[k])
            continue;
        if (*info == 0)
            ZY_P(getrf_tangent)(m, n, A, lda, ipiv, dA[k], lda, dA[k], lda);
        else
            ZY_P(nan_fill)(m, n, dA[k], lda);
    }
    return 0;
}

ZY_API ZY_T ZY_P(getrf_fwd)(int layout, int m, int n, const ZY_T *A, int lda, const int *ipiv, const int *info,
                            ZY_T *dA) {
    return ZY_P(getrf_fwd_lanes)(layout, m, n, A, lda, ipiv, info, 1, &dA);
}

/* A: the input, kept at the call, factored again once for every lane */
ZY_API void ZY_P(getrf_rev_lanes)(int layout, int m, int n, const ZY_T *A, int lda, const int *ipiv, int info,
                                  int lanes, ZY_T *const *d) {
    (void)layout, (void)ipiv;
    ZY_T *const *dA = d;
    int *piv = ZY_P(pivots)(m, n);
    ZY_T *F = info == 0 ? ZY_P(lu_of)(m, n, A, lda, piv) : NULL;
    for (int k = 0; k < lanes; k++) {
        if (!dA[k])
            continue;
        if (F)
            ZY_P(getrf_adjoint)(m, n, F, m > 0 ? m : 1, piv, dA[k], lda);
        else
            ZY_P(nan_fill)(m, n, dA[k], lda);
    }
    free(F), free(piv);
}

ZY_API void ZY_P(getrf_rev)(int layout, int m, int n, const ZY_T *A, int lda, const int *ipiv, int info,
                            ZY_T *dA, ZY_T dr) {
    (void)dr;
    ZY_P(getrf_rev_lanes)(layout, m, n, A, lda, ipiv, info, 1, &dA);
}

/* ---- getrs: B = op(A)^-1 B with A's LU factors ------------------------------------- */
ZY_API void *ZY_P(getrs_save)(int which, int layout, int trans, int n, int nrhs, const ZY_T *A, int lda,
                              const int *ipiv, const ZY_T *B, int ldb, const int *info) {
    (void)trans, (void)info;
    if (which == 6)
        return zy_copy_span(ipiv, n, sizeof(int));
    return which == 4 ? zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T))
                      : zy_copy_span(B, zy_mspan(layout, n, nrhs, ldb), sizeof(ZY_T));
}

/* M = op(A)^-1 M in place (n x nrhs, leading dimension ldm), A's factors in F */
static void ZY_P(lu_solve)(int trans, int n, int nrhs, const ZY_T *F, int ldf, const int *ipiv, ZY_T *M, int ldm) {
    char t = trans == 111 ? 'N' : 'T';
    int info = 0;
    ZY_F(getrs)(&t, &n, &nrhs, F, &ldf, ipiv, M, &ldm, &info);
}

/* op(A)^-1 M_k in place for every present lane, in one solve */
static void ZY_P(lu_solve_lanes)(int trans, int n, int nrhs, const ZY_T *F, int ldf, const int *ipiv, int lanes,
                                 ZY_T *const *M, int ldm) {
    ZY_T *P = ZY_P(lanes_pack)(lanes, M, n, nrhs, ldm);
    if (!P) {
        for (int k = 0; k < lanes; k++)
            if (M[k])
                ZY_P(lu_solve)(trans, n, nrhs, F, ldf, ipiv, M[k], ldm);
        return;
    }
    ZY_P(lu_solve)(trans, n, ZY_P(lanes_present)(lanes, M) * nrhs, F, ldf, ipiv, P, n > 0 ? n : 1);
    ZY_P(lanes_unpack)(lanes, M, n, nrhs, ldm, P);
}

/* X = op(A)^-1 B (packed n x nrhs) from A's factors F */
static ZY_T *ZY_P(lu_solution)(int layout, int trans, int n, int nrhs, const ZY_T *F, int ldf, const int *ipiv,
                               const ZY_T *B, int ldb) {
    ZY_T *X = ZY_P(mcopy)(layout, n, nrhs, B, ldb);
    ZY_P(lu_solve)(trans, n, nrhs, F, ldf, ipiv, X, n > 0 ? n : 1);
    return X;
}

/* the tangent of P L U given the factors F and their tangent dF (packed n x n result) */
static ZY_T *ZY_P(lu_product_tangent)(int n, const ZY_T *F, int ldf, const int *ipiv, const ZY_T *dF, int lddf) {
    int ld = n > 0 ? n : 1;
    ZY_T *DL = ZY_P(mtemp)(n, n), *DU = ZY_P(mtemp)(n, n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            ZY_T v = dF[i + (long)j * lddf];
            DL[i + (long)j * ld] = i > j ? v : 0;
            DU[i + (long)j * ld] = i > j ? 0 : v;
        }
    ZY_B(trmm)(102, 142, 121, 111, 131, n, n, 1, F, ldf, DL, ld); /* dL U */
    ZY_B(trmm)(102, 141, 122, 111, 132, n, n, 1, F, ldf, DU, ld); /* L dU */
    for (long i = 0; i < (long)n * n; i++)
        DL[i] += DU[i];
    ZY_P(swap_rows)(n, ipiv, n, DL, ld, 1); /* P (...) */
    free(DU);
    return DL;
}

/* dF += the adjoint of the factors F of A0 = P L U given Abar (packed n x n, changed) */
static void ZY_P(lu_product_adjoint)(int n, const ZY_T *F, int ldf, const int *ipiv, ZY_T *Abar, ZY_T *dF, int lddf) {
    int ld = n > 0 ? n : 1;
    ZY_P(swap_rows)(n, ipiv, n, Abar, ld, 0); /* M = P^T Abar */
    ZY_T *Lb = ZY_P(mcopy)(102, n, n, Abar, ld);
    ZY_B(trmm)(102, 142, 121, 112, 131, n, n, 1, F, ldf, Lb, ld); /* M U^T */
    ZY_B(trmm)(102, 141, 122, 112, 132, n, n, 1, F, ldf, Abar, ld); /* L^T M */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            dF[i + (long)j * lddf] += i > j ? Lb[i + (long)j * ld] : Abar[i + (long)j * ld];
    free(Lb);
}

/* Out -= op(dA0) X (n x nrhs), dA0 = P (dL U + L dU) the tangent of P L U from the
   factors F and their tangent dF, by products with n x nrhs blocks (O(n^2 nrhs); forming
   the n x n dA0 first, lu_product_tangent, costs two n^3 triangular products):
     op = N: P (sl(dF) (U X) + L (u(dF) X)),  op = T: U^T (sl(dF)^T W) + u(dF)^T (L^T W), W = P^T X */
static void ZY_P(lu_tangent_times)(int trans, int n, int nrhs, const ZY_T *F, int ldf, const int *ipiv,
                                   const ZY_T *dF, int lddf, const ZY_T *X, int ldx, ZY_T *Out, int ldo) {
    int ld = n > 0 ? n : 1;
    ZY_T *DL = ZY_P(mtemp)(n, n), *S = ZY_P(mtemp)(n, nrhs);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            DL[i + (long)j * ld] = i > j ? dF[i + (long)j * lddf] : 0;
    ZY_T *Y = ZY_P(mcopy)(102, n, nrhs, X, ldx);
    if (trans != 111)
        ZY_P(swap_rows)(n, ipiv, nrhs, Y, ld, 0); /* W = P^T X */
    ZY_T *Z = ZY_P(mcopy)(102, n, nrhs, Y, ld);
    if (trans == 111) {
        ZY_B(trmm)(102, 141, 121, 111, 131, n, nrhs, 1, F, ldf, Y, ld);  /* U X */
        ZY_B(gemm)(102, 111, 111, n, nrhs, n, 1, DL, ld, Y, ld, 0, S, ld); /* sl(dF) U X */
        ZY_B(trmm)(102, 141, 121, 111, 131, n, nrhs, 1, dF, lddf, Z, ld); /* u(dF) X */
        ZY_B(trmm)(102, 141, 122, 111, 132, n, nrhs, 1, F, ldf, Z, ld);  /* L u(dF) X */
    } else {
        ZY_B(gemm)(102, 112, 111, n, nrhs, n, 1, DL, ld, Y, ld, 0, S, ld); /* sl(dF)^T W */
        ZY_B(trmm)(102, 141, 121, 112, 131, n, nrhs, 1, F, ldf, S, ld);    /* U^T ... */
        ZY_B(trmm)(102, 141, 122, 112, 132, n, nrhs, 1, F, ldf, Z, ld);    /* L^T W */
        ZY_B(trmm)(102, 141, 121, 112, 131, n, nrhs, 1, dF, lddf, Z, ld);  /* u(dF)^T L^T W */
    }
    for (int j = 0; j < nrhs; j++)
        for (int i = 0; i < n; i++)
            S[i + (long)j * ld] += Z[i + (long)j * ld];
    if (trans == 111)
        ZY_P(swap_rows)(n, ipiv, nrhs, S, ld, 1); /* P (...) */
    for (int j = 0; j < nrhs; j++)
        for (int i = 0; i < n; i++)
            Out[i + (long)j * ldo] -= S[i + (long)j * ld];
    free(DL), free(S), free(Y), free(Z);
}

/* dF += the adjoint of the factors F of A0 = P L U given Abar = -Pm Qm^T (Pm, Qm n x nrhs,
   packed): lu_product_adjoint's sl(P^T Abar U^T) + u(L^T P^T Abar) with the n x nrhs
   blocks W = P^T Pm multiplied first, -W (U Qm)^T and -(L^T W) Qm^T (O(n^2 nrhs), no
   n x n triangular product) */
static void ZY_P(lu_outer_adjoint)(int n, int nrhs, const ZY_T *F, int ldf, const int *ipiv, const ZY_T *Pm,
                                   int ldp, const ZY_T *Qm, int ldq, ZY_T *dF, int lddf) {
    int ld = n > 0 ? n : 1;
    ZY_T *W = ZY_P(mcopy)(102, n, nrhs, Pm, ldp), *V = ZY_P(mcopy)(102, n, nrhs, Qm, ldq);
    ZY_P(swap_rows)(n, ipiv, nrhs, W, ld, 0);                        /* W = P^T Pm */
    ZY_B(trmm)(102, 141, 121, 111, 131, n, nrhs, 1, F, ldf, V, ld); /* U Qm */
    ZY_T *Lb = ZY_P(mtemp)(n, n), *Ub = ZY_P(mtemp)(n, n);
    ZY_B(gemm)(102, 111, 112, n, n, nrhs, -1, W, ld, V, ld, 0, Lb, ld);  /* P^T Abar U^T */
    ZY_B(trmm)(102, 141, 122, 112, 132, n, nrhs, 1, F, ldf, W, ld);       /* L^T W */
    ZY_B(gemm)(102, 111, 112, n, n, nrhs, -1, W, ld, Qm, ldq, 0, Ub, ld); /* L^T P^T Abar */
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            dF[i + (long)j * lddf] += i > j ? Lb[i + (long)j * ld] : Ub[i + (long)j * ld];
    free(W), free(V), free(Lb), free(Ub);
}

ZY_API ZY_T ZY_P(getrs_fwd_lanes)(int layout, int trans, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv,
                                  const ZY_T *B, int ldb, const int *info, int lanes, ZY_T *const *d) {
    (void)info;
    ZY_T *const *dA = d, *const *dB = d + lanes;
    ZY_T *X = NULL;
    int ld = n > 0 ? n : 1;
    for (int k = 0; k < lanes; k++) { /* dB -= op(dA0) X, X solved once */
        if (!dB[k] || !dA[k])
            continue;
        if (!X)
            X = ZY_P(lu_solution)(layout, trans, n, nrhs, A, lda, ipiv, B, ldb);
        ZY_P(lu_tangent_times)(trans, n, nrhs, A, lda, ipiv, dA[k], lda, X, ld, dB[k], ldb);
    }
    ZY_P(lu_solve_lanes)(trans, n, nrhs, A, lda, ipiv, lanes, dB, ldb);
    free(X);
    return 0;
}

ZY_API ZY_T ZY_P(getrs_fwd)(int layout, int trans, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv,
                            const ZY_T *B, int ldb, const int *info, const ZY_T *dA, ZY_T *dB) {
    ZY_T *d[2] = {(ZY_T *)dA, dB};
    return ZY_P(getrs_fwd_lanes)(layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info, 1, d);
}

ZY_API void ZY_P(getrs_rev_lanes)(int layout, int trans, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv,
                                  const ZY_T *B, int ldb, int info, int lanes, ZY_T *const *d) {
    (void)info;
    ZY_T *const *dA = d, *const *dB = d + lanes;
    ZY_P(lu_solve_lanes)(trans == 111 ? 112 : 111, n, nrhs, A, lda, ipiv, lanes, dB, ldb); /* Bbar = op(A)^-T Xbar */
    ZY_T *X = NULL;
    int ld = n > 0 ? n : 1;
    for (int k = 0; k < lanes; k++) { /* Abar = -Bbar X^T (op = N) or -X Bbar^T, X solved again once */
        if (!dB[k] || !dA[k])
            continue;
        if (!X)
            X = ZY_P(lu_solution)(layout, trans, n, nrhs, A, lda, ipiv, B, ldb);
        if (trans == 111)
            ZY_P(lu_outer_adjoint)(n, nrhs, A, lda, ipiv, dB[k], ldb, X, ld, dA[k], lda);
        else
            ZY_P(lu_outer_adjoint)(n, nrhs, A, lda, ipiv, X, ld, dB[k], ldb, dA[k], lda);
    }
    free(X);
}

ZY_API void ZY_P(getrs_rev)(int layout, int trans, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv,
                            const ZY_T *B, int ldb, int info, ZY_T *dA, ZY_T *dB, ZY_T dr) {
    (void)dr;
    ZY_T *d[2] = {dA, dB};
    ZY_P(getrs_rev_lanes)(layout, trans, n, nrhs, A, lda, ipiv, B, ldb, info, 1, d);
}

/* ---- gesv: A = P L U and B = A^-1 B in place --------------------------------------- */
/* reverse mode copies the factors, pivots and solution right after the call (the rule's
   `keeps`: which 3, 5, 6), forward mode needs nothing saved */
ZY_API void *ZY_P(gesv_save)(int which, int layout, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv,
                             const ZY_T *B, int ldb, const int *info) {
    (void)info;
    if (which == 5)
        return zy_copy_span(ipiv, n, sizeof(int));
    return which == 3 ? zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T))
                      : zy_copy_span(B, zy_mspan(layout, n, nrhs, ldb), sizeof(ZY_T));
}

/* after the call (the rule's forward_after): A holds the factors, ipiv the pivots, B the
   solution X and *info the status the call left; nothing factored or solved again but the
   lanes' dB, together */
ZY_API ZY_T ZY_P(gesv_fwd_lanes)(int layout, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv, const ZY_T *B,
                                 int ldb, const int *info, int lanes, ZY_T *const *d) {
    (void)layout;
    ZY_T *const *dA = d, *const *dB = d + lanes;
    if (*info != 0) {
        for (int k = 0; k < lanes; k++) {
            if (dA[k])
                ZY_P(nan_fill)(n, n, dA[k], lda);
            if (dB[k])
                ZY_P(nan_fill)(n, nrhs, dB[k], ldb);
        }
        return 0;
    }
    for (int k = 0; k < lanes; k++) /* dX = A^-1 (dB - dA X) */
        if (dB[k] && dA[k] && nrhs > 0)
            ZY_B(gemm)(102, 111, 111, n, nrhs, n, -1, dA[k], lda, B, ldb, 1, dB[k], ldb);
    ZY_P(lu_solve_lanes)(111, n, nrhs, A, lda, ipiv, lanes, dB, ldb);
    for (int k = 0; k < lanes; k++) /* the factors' tangent, from the input's (read above) */
        if (dA[k])
            ZY_P(getrf_tangent)(n, n, A, lda, ipiv, dA[k], lda, dA[k], lda);
    return 0;
}

ZY_API ZY_T ZY_P(gesv_fwd)(int layout, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv, const ZY_T *B,
                           int ldb, const int *info, ZY_T *dA, ZY_T *dB) {
    ZY_T *d[2] = {dA, dB};
    return ZY_P(gesv_fwd_lanes)(layout, n, nrhs, A, lda, ipiv, B, ldb, info, 1, d);
}

/* A: the LU factors, ipiv: the pivots, B: the solution X, as the call left them (kept);
   info: the call's status. The lanes' Xbar solved together. */
ZY_API void ZY_P(gesv_rev_lanes)(int layout, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv, const ZY_T *B,
                                 int ldb, int info, int lanes, ZY_T *const *d) {
    (void)layout;
    ZY_T *const *dA = d, *const *dB = d + lanes;
    if (info != 0) { /* U singular: no derivative */
        for (int k = 0; k < lanes; k++) {
            if (dA[k])
                ZY_P(nan_fill)(n, n, dA[k], lda);
            if (dB[k])
                ZY_P(nan_fill)(n, nrhs, dB[k], ldb);
        }
        return;
    }
    for (int k = 0; k < lanes; k++) /* the adjoint of the LU factors A holds after the call */
        if (dA[k])
            ZY_P(getrf_adjoint)(n, n, A, lda, ipiv, dA[k], lda);
    ZY_P(lu_solve_lanes)(112, n, nrhs, A, lda, ipiv, lanes, dB, ldb); /* Bbar = A^-T Xbar */
    for (int k = 0; k < lanes; k++)
        if (dA[k] && dB[k] && nrhs > 0) /* Abar -= Bbar X^T */
            ZY_B(gemm)(102, 111, 112, n, n, nrhs, -1, dB[k], ldb, B, ldb, 1, dA[k], lda);
}

ZY_API void ZY_P(gesv_rev)(int layout, int n, int nrhs, const ZY_T *A, int lda, const int *ipiv, const ZY_T *B,
                           int ldb, int info, ZY_T *dA, ZY_T *dB, ZY_T dr) {
    (void)dr;
    ZY_T *d[2] = {dA, dB};
    ZY_P(gesv_rev_lanes)(layout, n, nrhs, A, lda, ipiv, B, ldb, info, 1, d);
}
