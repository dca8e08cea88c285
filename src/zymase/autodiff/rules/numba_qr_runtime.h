/* Derivatives of np.linalg.qr in njit code, for one precision: included by
   numba_linalg_runtime.c inside its per-precision part (ZN_T, ZN_P, ZN_F and its helpers
   are defined there).

   Numba computes the reduced QR of A (m x n, p = min(m, n)) in two helper calls with R
   copied out in between:
     numba_ez_geqrf(kind, m, n, A, lda, tau)   A overwritten by R (on and above the
                   diagonal) and Householder reflectors (below it), tau their scales;
     (loops)       R (p x n) = the upper trapezoid of A;
     numba_ez_xxgqr(kind, m, p, p, A, lda, tau) A's first p columns overwritten by Q.
   The Householder form in between has no matrix-level derivative, so the pair is
   differentiated as one QR (numba_linalg.py pairs the calls: Helper.hands_state,
   state_from), with the tangent and adjoint of R flowing through geqrf's output, the one
   the loops copy, and Q's through xxgqr's:
     forward  geqrf_fwd (after the call) computes dR and dQ, writes dR over A's upper
              trapezoid (the reflectors' and tau's tangents are NaN: nothing but xxgqr
              may read them) and returns dQ, which xxgqr_fwd writes over A and frees;
     reverse  geqrf_save (after the call) keeps the state [Qbar | Householder form |
              tau], Qbar zeroed; xxgqr_rev adds Q's adjoint to Qbar and clears it from
              A's shadow; geqrf_rev reads R's adjoint from the upper trapezoid, makes A's
              adjoint from both (an adjoint arriving for the reflectors or tau, from
              another program than Numba's, gives NaN rather than being dropped).
   The math, for the square part X = A[:, :p] = Q U (U = R[:, :p], upper triangular,
   invertible: A of full rank):
     tangent  C = Q^T dX U^-1,  W = triu(C) + tril(C, -1)^T,  dU = W U,
              dQ = dX U^-1 - Q W;
     adjoint  (Walter & Lehmann 2018) M = U Ubar^T - Qbar^T Q,
              Xbar = (Qbar + Q copyltu(M)) U^-T, copyltu(M) the symmetric matrix of M's
              lower triangle;
   and when m < n, the rest Y = A[:, p:] = Q V (V = R[:, p:] = Q^T Y):
     tangent  dV = Q^T (dY - dQ V);
     adjoint  Ybar = Q Vbar, and Qbar += Y Vbar^T before the square part's adjoint.
   Triangular solves are trsm, products gemm (SciPy's routines). A rank-deficient A (a
   zero on R's diagonal) gives inf/NaN, never a plausible number. */

void ZN_F(orgqr)(const int *m, const int *n, const int *k, ZN_T *A, const int *lda, const ZN_T *tau, ZN_T *work,
                 const int *lwork, int *info);

/* Q (m x p, packed) from the Householder form F (leading dimension ldf) and tau */
static ZN_T *ZN_P(qr_q)(long m, long p, const ZN_T *F, long ldf, const ZN_T *tau) {
    ZN_T *Q = ZN_P(temp)(m, p), query = 0;
    for (long j = 0; j < p; j++)
        for (long i = 0; i < m; i++)
            Q[i + j * m] = F[i + j * ldf];
    int im = (int)m, ip = (int)p, lwork = -1, info = 0;
    ZN_F(orgqr)(&im, &ip, &ip, Q, &im, tau, &query, &lwork, &info);
    lwork = query > 1 ? (int)query : 1;
    ZN_T *work = ZN_P(temp)(lwork, 1);
    ZN_F(orgqr)(&im, &ip, &ip, Q, &im, tau, work, &lwork, &info);
    free(work);
    return Q;
}

/* R (p x n, packed): F's upper trapezoid */
static ZN_T *ZN_P(qr_r)(long p, long n, const ZN_T *F, long ldf) {
    ZN_T *R = ZN_P(temp)(p, n);
    for (long j = 0; j < n; j++)
        for (long i = 0; i <= j && i < p; i++)
            R[i + j * p] = F[i + j * ldf];
    return R;
}

/* B = B U^-1 (trans 'N') or B U^-T ('T'), B m x p packed, U the first p columns of R */
static void ZN_P(qr_right_solve)(char trans, long m, long p, const ZN_T *R, ZN_T *B) {
    int im = (int)m, ip = (int)p;
    ZN_T one = 1;
    if (m > 0 && p > 0)
        ZN_F(trsm)("R", "U", &trans, "N", &im, &ip, &one, R, &ip, B, &im);
}

/* The tangents dR (p x n) and dQ (m x p), packed, of Q and R for A's tangent dA (lda) */
static void ZN_P(qr_tangent)(long m, long n, const ZN_T *Q, const ZN_T *R, const ZN_T *dA, long lda, ZN_T *dQ,
                             ZN_T *dR) {
    long p = m < n ? m : n;
    ZN_T *B = ZN_P(temp)(m, p), *C = ZN_P(temp)(p, p);
    for (long j = 0; j < p; j++)
        for (long i = 0; i < m; i++)
            B[i + j * m] = dA[i + j * lda];
    ZN_P(qr_right_solve)('N', m, p, R, B);                   /* dX U^-1 */
    ZN_P(mm)('T', 'N', p, p, m, 1, Q, m, B, m, 0, C, p);     /* C = Q^T dX U^-1 */
    for (long j = 0; j < p; j++)                             /* W = triu(C) + tril(C, -1)^T */
        for (long i = j + 1; i < p; i++) {
            C[j + i * p] += C[i + j * p];
            C[i + j * p] = 0;
        }
    for (long j = 0; j < p; j++) {
        for (long i = 0; i < m; i++)
            dQ[i + j * m] = B[i + j * m];
    }
    ZN_P(mm)('N', 'N', m, p, p, -1, Q, m, C, p, 1, dQ, m);   /* dQ = dX U^-1 - Q W */
    ZN_P(mm)('N', 'N', p, p, p, 1, C, p, R, p, 0, dR, p);    /* dU = W U */
    if (n > p) {                                              /* dV = Q^T (dY - dQ V) */
        ZN_T *T = ZN_P(temp)(m, n - p);
        for (long j = 0; j < n - p; j++)
            for (long i = 0; i < m; i++)
                T[i + j * m] = dA[i + (j + p) * lda];
        ZN_P(mm)('N', 'N', m, n - p, p, -1, dQ, m, R + p * p, p, 1, T, m);
        ZN_P(mm)('T', 'N', p, n - p, m, 1, Q, m, T, m, 0, dR + p * p, p);
        free(T);
    }
    free(B), free(C);
}

/* A's adjoint (m x n, written over dA with leading dimension lda) from Qbar (m x p,
   packed; overwritten) and Rbar (p x n, packed) */
static void ZN_P(qr_adjoint)(long m, long n, const ZN_T *Q, const ZN_T *R, ZN_T *Qbar, const ZN_T *Rbar, ZN_T *dA,
                             long lda) {
    long p = m < n ? m : n;
    if (n > p) {
        ZN_T *Y = ZN_P(temp)(m, n - p);
        ZN_P(mm)('N', 'N', m, n - p, p, 1, Q, m, R + p * p, p, 0, Y, m);          /* Y = Q V */
        ZN_P(mm)('N', 'T', m, p, n - p, 1, Y, m, Rbar + p * p, p, 1, Qbar, m);    /* Qbar += Y Vbar^T */
        ZN_P(mm)('N', 'N', m, n - p, p, 1, Q, m, Rbar + p * p, p, 0, dA + p * lda, lda); /* Ybar = Q Vbar */
        free(Y);
    }
    ZN_T *M = ZN_P(temp)(p, p);
    ZN_P(mm)('N', 'T', p, p, p, 1, R, p, Rbar, p, 0, M, p);      /* U Ubar^T */
    ZN_P(mm)('T', 'N', p, p, m, -1, Qbar, m, Q, m, 1, M, p);     /* ... - Qbar^T Q */
    for (long j = 0; j < p; j++)                                 /* copyltu(M) */
        for (long i = 0; i < j; i++)
            M[i + j * p] = M[j + i * p];
    ZN_P(mm)('N', 'N', m, p, p, 1, Q, m, M, p, 1, Qbar, m);      /* Qbar + Q copyltu(M) */
    ZN_P(qr_right_solve)('T', m, p, R, Qbar);                    /* ... U^-T */
    for (long j = 0; j < p; j++)
        for (long i = 0; i < m; i++)
            dA[i + j * lda] = Qbar[i + j * m];
    free(M);
}

/* ---- numba_ez_geqrf(kind, m, n, A, lda, tau) ------------------------------------------ */
/* the reverse sweep's state, after the call: [Qbar (m x p, zero) | F (m x n) | tau (p)] */
ZN_API void *ZN_P(ez_geqrf_save)(int which, long m, long n, const ZN_T *F, long lda, const ZN_T *tau) {
    (void)which;
    long p = m < n ? m : n;
    ZN_T *S = ZN_P(temp)(m * p + m * n + p, 1), *G = S + m * p;
    for (long j = 0; j < n; j++)
        for (long i = 0; i < m; i++)
            G[i + j * m] = F[i + j * lda];
    for (long i = 0; i < p; i++)
        G[m * n + i] = tau[i];
    return S;
}

/* returns dQ (m x p, packed, malloc'd) for xxgqr_fwd, NULL when A has no tangent */
ZN_API void *ZN_P(ez_geqrf_fwd)(long m, long n, const ZN_T *F, long lda, const ZN_T *tau, int status, ZN_T *dA,
                                ZN_T *dtau) {
    long p = m < n ? m : n;
    ZN_P(fill_nan)(p, 1, dtau, p);
    if (!dA || m <= 0 || n <= 0)
        return NULL;
    ZN_T *dQ = ZN_P(temp)(m, p);
    if (status != 0) {
        ZN_P(fill_nan)(m, p, dQ, m);
        ZN_P(fill_nan)(m, n, dA, lda);
        return dQ;
    }
    ZN_T *Q = ZN_P(qr_q)(m, p, F, lda, tau), *R = ZN_P(qr_r)(p, n, F, lda), *dR = ZN_P(temp)(p, n);
    ZN_P(qr_tangent)(m, n, Q, R, dA, lda, dQ, dR);
    for (long j = 0; j < n; j++)
        for (long i = 0; i < m; i++)
            dA[i + j * lda] = i <= j && i < p ? dR[i + j * p] : (ZN_T)NAN; /* the reflectors' tangent: NaN */
    free(Q), free(R), free(dR);
    return dQ;
}

ZN_API void ZN_P(ez_geqrf_rev)(long m, long n, const ZN_T *S, long lda, const ZN_T *tau, int status, ZN_T *dA,
                               ZN_T *dtau) {
    (void)tau;
    long p = m < n ? m : n;
    if (!dA || m <= 0 || n <= 0)
        return;
    int stray = 0; /* an adjoint for the reflectors or tau: read by something but xxgqr */
    for (long j = 0; j < p; j++)
        for (long i = j + 1; i < m; i++)
            stray |= dA[i + j * lda] != 0;
    for (long i = 0; dtau && i < p; i++) {
        stray |= dtau[i] != 0;
        dtau[i] = 0; /* tau's value before the call is not read */
    }
    if (status != 0 || stray) {
        ZN_P(fill_nan)(m, n, dA, lda);
        return;
    }
    const ZN_T *F = S + m * p, *t = F + m * n;
    ZN_T *Qbar = ZN_P(temp)(m, p), *Q = ZN_P(qr_q)(m, p, F, m, t), *R = ZN_P(qr_r)(p, n, F, m);
    ZN_T *Rbar = ZN_P(qr_r)(p, n, dA, lda);
    memcpy(Qbar, S, (size_t)(m * p) * sizeof(ZN_T));
    ZN_P(qr_adjoint)(m, n, Q, R, Qbar, Rbar, dA, lda);
    free(Qbar), free(Q), free(R), free(Rbar);
}

/* ---- numba_ez_xxgqr(kind, m, p, k, A, lda, tau): A's first p columns overwritten by Q --
   state: geqrf's (forward: dQ, consumed here; reverse: the state geqrf_rev reads) */
ZN_API void ZN_P(ez_xxgqr_fwd)(ZN_T *state, long m, long p, long k, const ZN_T *A, long lda, const ZN_T *tau,
                               int status, ZN_T *dA, ZN_T *dtau) {
    (void)k, (void)A, (void)tau, (void)dtau;
    if (dA) {
        for (long j = 0; j < p; j++)
            for (long i = 0; i < m; i++)
                dA[i + j * lda] = state && status == 0 ? state[i + j * m] : (ZN_T)NAN;
    }
    free(state);
}

ZN_API void ZN_P(ez_xxgqr_rev)(ZN_T *state, long m, long p, long k, const ZN_T *A, long lda, const ZN_T *tau,
                               int status, ZN_T *dA, ZN_T *dtau) {
    (void)k, (void)A, (void)tau, (void)status, (void)dtau;
    if (!dA)
        return;
    for (long j = 0; j < p; j++)
        for (long i = 0; i < m; i++) {
            state[i + j * m] += dA[i + j * lda]; /* Qbar, for geqrf_rev */
            dA[i + j * lda] = 0;
        }
}
