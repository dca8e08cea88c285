/* LAPACK derivatives (Cholesky: potrf, potrs) as matrix-level rules, for one precision:
   included by blas_runtime.c inside its per-precision part (ZY_T, ZY_P, ZY_B, ZY_F, ZY_API
   and the helpers are defined there, with the level-3 ones of blas_runtime_level3.h). */

/* ---- LAPACK: Cholesky factorization and solve (column-major, Fortran spelling) ------ */
/* potrf overwrites the stored triangle of A with L (A = L L^T, uplo lower) or U (A = U^T
   U, upper); potrs solves A X = B with that factor, B overwritten by X. The matrix-level
   rules (not LAPACK differentiated): with P = Phi(X) the lower triangle of X with its
   diagonal halved,
     potrf:  dL = L Phi(L^-1 dA L^-T);  the adjoint of A is G = L^-T Phi(L^T Lbar) L^-1,
             folded onto the stored triangle (G + G^T off the diagonal, G on it),
             computed by blocks (potrf_adjoint) from the factor the call computed (no
             factorization again; the tangent likewise, after the call);
     potrs:  dX = A^-1 (dB - (dL L^T + L dL^T) X);  Bbar = A^-1 Xbar,
             Lbar = -(Bbar X^T + X Bbar^T) L on the factor's triangle.
   A factorization that fails (A not positive definite: info > 0) has no derivative: the
   tangents or adjoints it would give are NaN, never a silent number. */

/* ---- vector mode (width N): every lane of one call at once ------------------------- */
/* At width N the generated code calls <p><name>_fwd_lanes / _rev_lanes once per primal
   call, with `lanes` shadows per array argument (`d[a * lanes + k]`: array a, lane k;
   NULL where the array is constant), instead of the width-1 rule once per lane: the
   factorization or decomposition the derivative needs is computed once for all lanes,
   and the lanes' right-hand sides are solved in one call (one solve of lanes x nrhs
   columns: level-3 BLAS). The width-1 entry points are the lanes ones with one lane, and
   with one lane nothing is packed: the same calls on the same data as before. */

/* how many of the lanes' M_k are there (not NULL) */
static int ZY_P(lanes_present)(int lanes, ZY_T *const *M) {
    int count = 0;
    for (int k = 0; k < lanes; k++)
        count += M[k] != NULL;
    return count;
}

/* every present lane's n x nrhs M_k (leading dimension ldm) side by side in one packed
   n x (count nrhs) matrix, lane after lane; NULL when fewer than two lanes have one (the
   caller then works in place) */
static ZY_T *ZY_P(lanes_pack)(int lanes, ZY_T *const *M, int n, int nrhs, int ldm) {
    int count = ZY_P(lanes_present)(lanes, M), ld = n > 0 ? n : 1;
    if (count < 2)
        return NULL;
    ZY_T *P = ZY_P(mtemp)(n, count * nrhs), *at = P;
    for (int k = 0; k < lanes; k++) {
        if (!M[k])
            continue;
        for (int j = 0; j < nrhs; j++, at += ld)
            memcpy(at, M[k] + (long)j * ldm, (size_t)(n > 0 ? n : 0) * sizeof(ZY_T));
    }
    return P;
}

/* the packed P back into the present lanes' M_k, and P freed */
static void ZY_P(lanes_unpack)(int lanes, ZY_T *const *M, int n, int nrhs, int ldm, ZY_T *P) {
    const ZY_T *at = P;
    int ld = n > 0 ? n : 1;
    for (int k = 0; k < lanes; k++) {
        if (!M[k])
            continue;
        for (int j = 0; j < nrhs; j++, at += ld)
            memcpy(M[k] + (long)j * ldm, at, (size_t)(n > 0 ? n : 0) * sizeof(ZY_T));
    }
    free(P);
}

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

/* dL = L Phi(L^-1 S L^-T), in place of S: the tangent of the factor L (packed lower
   n x n) for the symmetric tangent S of A (packed n x n, both triangles) */
static void ZY_P(potrf_tangent)(int n, const ZY_T *L, ZY_T *S) {
    int ld = n > 0 ? n : 1;
    ZY_B(trsm)(102, 141, 122, 111, 131, n, n, 1, L, ld, S, ld); /* L^-1 S */
    ZY_B(trsm)(102, 142, 122, 112, 131, n, n, 1, L, ld, S, ld); /* ... L^-T */
    ZY_P(phi)(n, S);
    ZY_B(trmm)(102, 141, 122, 111, 131, n, n, 1, L, ld, S, ld); /* L Phi(...) */
}

/* The adjoint of one diagonal block (nb x nb, leading dimension ld; its factor D, leading
   dimension ldd): on entry the lower
   triangle of Db is Dbar (what lies above it is ignored), on exit it is the adjoint of the
   block's stored triangle (zero above): the formula of the header on the block. */
static void ZY_P(potrf_block_rev)(int nb, const ZY_T *D, int ldd, ZY_T *Db, int ld) {
    int ldg = nb > 0 ? nb : 1;
    ZY_T *G = ZY_P(mtemp)(nb, nb);
    for (int j = 0; j < nb; j++)
        for (int i = j; i < nb; i++)
            G[i + (long)j * nb] = Db[i + (long)j * ld];
    ZY_B(trmm)(102, 141, 122, 112, 131, nb, nb, 1, D, ldd, G, ldg); /* D^T Dbar */
    ZY_P(phi)(nb, G);
    ZY_B(trsm)(102, 141, 122, 112, 131, nb, nb, 1, D, ldd, G, ldg); /* D^-T Phi */
    ZY_B(trsm)(102, 142, 122, 111, 131, nb, nb, 1, D, ldd, G, ldg); /* ... D^-1 */
    for (int j = 0; j < nb; j++)
        for (int i = 0; i < nb; i++)
            Db[i + (long)j * ld] = i < j ? 0 : i == j ? G[i + (long)j * nb] : G[i + (long)j * nb] + G[j + (long)i * nb];
    free(G);
}

/* the block size of the blocked adjoint: small matrices take small blocks, so that the
   blocked code is what the tests check too */
static int ZY_P(potrf_block)(int n) { return n <= 32 ? 2 : n <= 256 ? 32 : 128; }

/* The adjoint by blocks (Murray 2016, "Differentiation of the Cholesky decomposition"):
   the left-looking blocked Cholesky, block column [j, k) of L,
     D = chol(A_DD - R R^T),  C = (A_CD - B R^T) D^-T
   (R = L[j:k, :j], D = L[j:k, j:k], B = L[k:, :j], C = L[k:, j:k]), reversed block by
   block from the last, in place on the lower triangle of G (Lbar on entry, the adjoint
   of A's lower triangle on exit; leading dimension ldg), L lower (leading dimension ldl;
   what lies above its diagonal is not read):
     Cb = Cb D^-1;  Bb -= Cb R;  Db -= Cb^T C;  Db = the block's adjoint;
     Rb -= Cb^T B + (Db + Db^T) R.
   Every step is a gemm or a triangular solve on one block column: about 2/3 n^3 flops,
   twice the factorization, where the full-matrix formula takes 3 n^3. G's strictly upper
   triangle (the adjoint of the triangle the call does not read, when G is the caller's
   shadow) is kept: the diagonal blocks' upper parts, which the block steps use as
   scratch, are put back. Shared with the Numba runtime's np.linalg.cholesky
   (numba_lapack_runtime.h). */
static void ZY_P(potrf_adjoint)(int n, const ZY_T *L, int ldl, ZY_T *G, int ldg) {
    int nb = ZY_P(potrf_block)(n);
    ZY_T *above = ZY_P(mtemp)(nb, nb); /* a diagonal block's strictly upper part */
    for (int j = (n - 1) / nb * nb; j >= 0; j -= nb) {
        int k = j + nb < n ? j + nb : n, w = k - j, rest = n - k;
        const ZY_T *R = L + j, *D = L + j + (long)j * ldl, *B = L + k, *C = L + k + (long)j * ldl;
        ZY_T *Rb = G + j, *Db = G + j + (long)j * ldg, *Bb = G + k, *Cb = G + k + (long)j * ldg;
        for (int c = 0; c < w; c++)
            for (int r = 0; r < c; r++)
                above[r + (long)c * w] = Db[r + (long)c * ldg];
        if (rest > 0) {
            ZY_B(trsm)(102, 142, 122, 111, 131, rest, w, 1, D, ldl, Cb, ldg); /* Cb D^-1 */
            if (j > 0)
                ZY_B(gemm)(102, 111, 111, rest, j, w, -1, Cb, ldg, R, ldl, 1, Bb, ldg); /* Bb -= Cb R */
            ZY_B(gemm)(102, 112, 111, w, w, rest, -1, Cb, ldg, C, ldl, 1, Db, ldg); /* Db -= Cb^T C */
        }
        ZY_P(potrf_block_rev)(w, D, ldl, Db, ldg);
        if (j > 0) {
            if (rest > 0) /* Rb -= Cb^T B */
                ZY_B(gemm)(102, 112, 111, w, j, rest, -1, Cb, ldg, B, ldl, 1, Rb, ldg);
            ZY_T *S = ZY_P(mtemp)(w, w); /* Db + Db^T */
            for (int c = 0; c < w; c++)
                for (int r = 0; r < w; r++)
                    S[r + (long)c * w] = Db[r + (long)c * ldg] + Db[c + (long)r * ldg];
            ZY_B(gemm)(102, 111, 111, w, j, w, -1, S, w, R, ldl, 1, Rb, ldg); /* Rb -= S R */
            free(S);
        }
        for (int c = 0; c < w; c++)
            for (int r = 0; r < c; r++)
                Db[r + (long)c * ldg] = above[r + (long)c * w];
    }
    free(above);
}

/* the n x n matrix M (leading dimension ld) transposed in place */
static void ZY_P(transpose_square)(int n, ZY_T *M, int ld) {
    for (int j = 0; j < n; j++)
        for (int i = j + 1; i < n; i++) {
            ZY_T t = M[i + (long)j * ld];
            M[i + (long)j * ld] = M[j + (long)i * ld];
            M[j + (long)i * ld] = t;
        }
}

/* The adjoint of potrf's stored triangle, in place on the shadow dA (the other triangle's
   adjoint passes), from the factor F the call left (leading dimension lda). No n x n
   temporary: a lower factor is read where it is; an upper one (U = L^T) is transposed
   in place when F is the rule's own copy (`F_is_copy`), else copied once; dA is
   transposed in place around the computation. */
static void ZY_P(potrf_adjoint_stored)(int uplo, int n, ZY_T *F, int lda, int F_is_copy, ZY_T *dA) {
    const ZY_T *L = F;
    int ldl = lda;
    ZY_T *lower = NULL;
    if (uplo == 121 && F_is_copy)
        ZY_P(transpose_square)(n, F, lda);
    else if (uplo == 121)
        L = lower = ZY_P(lower_of)(uplo, n, F, lda), ldl = n;
    if (uplo == 121)
        ZY_P(transpose_square)(n, dA, lda);
    ZY_P(potrf_adjoint)(n, L, ldl, dA, lda);
    if (uplo == 121)
        ZY_P(transpose_square)(n, dA, lda);
    free(lower);
}

/* the factor the call left over A, kept right after it (or read in place when nothing
   overwrites A later: blas.py, the routine's `keeps`) */
ZY_API void *ZY_P(potrf_save)(int which, int layout, int uplo, int n, const ZY_T *A, int lda, const int *info) {
    (void)which, (void)uplo, (void)info;
    return zy_copy_span(A, zy_mspan(layout, n, n, lda), sizeof(ZY_T));
}

/* forward mode, called AFTER the primal call (blas_signatures: forward_after): F holds
   the factor, each lane's dA still the tangent of the input; the factor unpacked once */
ZY_API ZY_T ZY_P(potrf_fwd_lanes)(int layout, int uplo, int n, const ZY_T *F, int lda, const int *info, int lanes,
                                  ZY_T *const *d) {
    (void)layout;
    ZY_T *const *dA = d;
    if (n <= 0 || !ZY_P(lanes_present)(lanes, dA))
        return 0;
    if (*info != 0) {
        for (int k = 0; k < lanes; k++)
            if (dA[k])
                ZY_P(nan_triangle)(uplo, n, dA[k], lda);
        return 0;
    }
    ZY_T *L = ZY_P(lower_of)(uplo, n, F, lda);
    ZY_T *S = ZY_P(mtemp)(n, n); /* the symmetric tangent of A */
    for (int k = 0; k < lanes; k++) {
        if (!dA[k])
            continue;
        for (int j = 0; j < n; j++)
            for (int i = j; i < n; i++) {
                ZY_T t = uplo == 121 ? dA[k][j + (long)i * lda] : dA[k][i + (long)j * lda];
                S[i + (long)j * n] = S[j + (long)i * n] = t;
            }
        ZY_P(potrf_tangent)(n, L, S);
        ZY_P(to_stored)(uplo, n, S, dA[k], lda, 0);
    }
    free(L), free(S);
    return 0;
}

ZY_API ZY_T ZY_P(potrf_fwd)(int layout, int uplo, int n, const ZY_T *F, int lda, const int *info, ZY_T *dA) {
    return ZY_P(potrf_fwd_lanes)(layout, uplo, n, F, lda, info, 1, &dA);
}

/* F: the factor the call computed, read in place or kept after the call (which of the
   two, this code cannot tell: it is not written); an upper one unpacked once for every
   lane */
ZY_API void ZY_P(potrf_rev_lanes)(int layout, int uplo, int n, const ZY_T *F, int lda, int info, int lanes,
                                  ZY_T *const *d) {
    (void)layout;
    ZY_T *const *dA = d;
    if (n <= 0 || !ZY_P(lanes_present)(lanes, dA))
        return;
    if (info != 0) {
        for (int k = 0; k < lanes; k++)
            if (dA[k])
                ZY_P(nan_triangle)(uplo, n, dA[k], lda);
        return;
    }
    if (lanes == 1) {
        ZY_P(potrf_adjoint_stored)(uplo, n, (ZY_T *)F, lda, 0, dA[0]);
        return;
    }
    ZY_T *lower = uplo == 121 ? ZY_P(lower_of)(uplo, n, F, lda) : NULL;
    for (int k = 0; k < lanes; k++) {
        if (!dA[k])
            continue;
        if (uplo == 121)
            ZY_P(transpose_square)(n, dA[k], lda);
        ZY_P(potrf_adjoint)(n, lower ? lower : F, lower ? n : lda, dA[k], lda);
        if (uplo == 121)
            ZY_P(transpose_square)(n, dA[k], lda);
    }
    free(lower);
}

ZY_API void ZY_P(potrf_rev)(int layout, int uplo, int n, const ZY_T *F, int lda, int info, ZY_T *dA, ZY_T dr) {
    (void)dr;
    ZY_P(potrf_rev_lanes)(layout, uplo, n, F, lda, info, 1, &dA);
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

/* A^-1 M_k in place for every present lane, in one solve */
static void ZY_P(solve_lanes)(int uplo, int n, int nrhs, const ZY_T *A, int lda, int lanes, ZY_T *const *M, int ldm) {
    ZY_T *P = ZY_P(lanes_pack)(lanes, M, n, nrhs, ldm);
    if (!P) {
        for (int k = 0; k < lanes; k++)
            if (M[k])
                ZY_P(solve)(uplo, n, nrhs, A, lda, M[k], ldm);
        return;
    }
    ZY_P(solve)(uplo, n, ZY_P(lanes_present)(lanes, M) * nrhs, A, lda, P, n > 0 ? n : 1);
    ZY_P(lanes_unpack)(lanes, M, n, nrhs, ldm, P);
}

/* X = A^-1 B (packed n x nrhs) and the factor as a packed lower L, once for every lane */
static ZY_T *ZY_P(potrs_solution)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                                  ZY_T **L) {
    ZY_T *X = ZY_P(mcopy)(layout, n, nrhs, B, ldb);
    ZY_P(solve)(uplo, n, nrhs, A, lda, X, n > 0 ? n : 1);
    *L = ZY_P(lower_of)(uplo, n, A, lda);
    return X;
}

ZY_API ZY_T ZY_P(potrs_fwd_lanes)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B,
                                  int ldb, const int *info, int lanes, ZY_T *const *d) {
    (void)info;
    ZY_T *const *dA = d, *const *dB = d + lanes;
    ZY_T *X = NULL, *L = NULL, *dL = NULL, *T = NULL;
    int ld = n > 0 ? n : 1;
    for (int k = 0; k < lanes; k++) { /* dB -= (dL L^T + L dL^T) X */
        if (!dA[k])
            continue;
        if (!X)
            X = ZY_P(potrs_solution)(layout, uplo, n, nrhs, A, lda, B, ldb, &L), T = ZY_P(mtemp)(n, n);
        dL = ZY_P(lower_of)(uplo, n, dA[k], lda);
        ZY_B(gemm)(102, 111, 112, n, n, n, 1, dL, ld, L, ld, 0, T, ld);
        ZY_B(gemm)(102, 111, 112, n, n, n, 1, L, ld, dL, ld, 1, T, ld);
        ZY_B(gemm)(102, 111, 111, n, nrhs, n, -1, T, ld, X, ld, 1, dB[k], ldb);
        free(dL);
    }
    ZY_P(solve_lanes)(uplo, n, nrhs, A, lda, lanes, dB, ldb);
    free(X), free(L), free(T);
    return 0;
}

ZY_API ZY_T ZY_P(potrs_fwd)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                            const int *info, const ZY_T *dA, ZY_T *dB) {
    ZY_T *d[2] = {(ZY_T *)dA, dB};
    return ZY_P(potrs_fwd_lanes)(layout, uplo, n, nrhs, A, lda, B, ldb, info, 1, d);
}

ZY_API void ZY_P(potrs_rev_lanes)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B,
                                  int ldb, int info, int lanes, ZY_T *const *d) {
    (void)info;
    ZY_T *const *dA = d, *const *dB = d + lanes;
    ZY_P(solve_lanes)(uplo, n, nrhs, A, lda, lanes, dB, ldb); /* Bbar = A^-1 Xbar */
    ZY_T *X = NULL, *L = NULL, *W = NULL, *R = NULL;
    int ld = n > 0 ? n : 1;
    for (int k = 0; k < lanes; k++) { /* Lbar = -(Bbar X^T + X Bbar^T) L, X solved again from the B kept at the call */
        if (!dA[k])
            continue;
        if (!X)
            X = ZY_P(potrs_solution)(layout, uplo, n, nrhs, A, lda, B, ldb, &L), W = ZY_P(mtemp)(n, n),
            R = ZY_P(mtemp)(n, n);
        ZY_B(gemm)(102, 111, 112, n, n, nrhs, 1, dB[k], ldb, X, ld, 0, W, ld);
        ZY_B(gemm)(102, 111, 112, n, n, nrhs, 1, X, ld, dB[k], ldb, 1, W, ld);
        ZY_B(gemm)(102, 111, 111, n, n, n, -1, W, ld, L, ld, 0, R, ld);
        ZY_P(to_stored)(uplo, n, R, dA[k], lda, 1);
    }
    free(X), free(L), free(W), free(R);
}

ZY_API void ZY_P(potrs_rev)(int layout, int uplo, int n, int nrhs, const ZY_T *A, int lda, const ZY_T *B, int ldb,
                            int info, ZY_T *dA, ZY_T *dB, ZY_T dr) {
    (void)dr;
    ZY_T *d[2] = {dA, dB};
    ZY_P(potrs_rev_lanes)(layout, uplo, n, nrhs, A, lda, B, ldb, info, 1, d);
}
