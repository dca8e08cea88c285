/* LAPACK's symmetric eigendecomposition differentiated at the level of the call, by a
   matrix-level rule (issue 26 item 2): dsyev_ and dsyevd_, each after its workspace query
   (lwork = -1, which must pass through), with jobz 'V' (eigenvalues and eigenvectors
   used) and 'N' (eigenvalues only), upper and lower triangle, in reverse and forward mode
   against a central finite difference along a direction (the triangle the routine does
   not read, and A's padding rows, pass through with their derivative); a matrix with a
   repeated eigenvalue, whose eigenvalues' sum keeps its derivative (the identity on the
   diagonal); ssyevd_ in float against a central difference of the same steps in double. */
#include <stdio.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dsyev_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *);
void dsyevd_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *,
             const int *, int *);
void ssyevd_(const char *, const char *, const int *, float *, const int *, float *, float *, const int *, int *,
             const int *, int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 40

static double wsum(const double *y, int count) {
    double s = 0;
    for (int i = 0; i < count; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

/* cfg: bit 0 upper, bit 1 eigenvectors ('V'); lda = n + 1 */
static double l_syev(double *A, int cfg, int n) {
    int lda = n + 1, lwork = -1, info;
    double w[8], query, work[256];
    const char *uplo = cfg & 1 ? "U" : "L", *jobz = cfg & 2 ? "V" : "N";
    dsyev_(jobz, uplo, &n, A, &lda, w, &query, &lwork, &info);
    lwork = (int)query;
    dsyev_(jobz, uplo, &n, A, &lda, w, work, &lwork, &info);
    return 2.0 * wsum(w, n) + (cfg & 2 ? wsum(A, SZ) : 0.0);
}
static double l_syevd(double *A, int cfg, int n) {
    int lda = n + 1, lwork = -1, liwork = -1, iquery, iwork[64], info;
    double w[8], query, work[256];
    const char *uplo = cfg & 1 ? "U" : "L", *jobz = cfg & 2 ? "V" : "N";
    dsyevd_(jobz, uplo, &n, A, &lda, w, &query, &lwork, &iquery, &liwork, &info);
    lwork = (int)query, liwork = iquery;
    dsyevd_(jobz, uplo, &n, A, &lda, w, work, &lwork, iwork, &liwork, &info);
    return 2.0 * wsum(w, n) + (cfg & 2 ? wsum(A, SZ) : 0.0);
}
/* the sum of the eigenvalues (the trace) */
static double l_trace(double *A, int cfg, int n) {
    int lda = n + 1, lwork = 200, info;
    double w[8], work[200];
    dsyev_("N", cfg & 1 ? "U" : "L", &n, A, &lda, w, work, &lwork, &info);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += w[i];
    return s;
}

typedef double (*loss_fn)(double *, int, int);

static double A0[SZ], vA[SZ], A[SZ], dA[SZ];
static int CFG, NN;

static double fd(loss_fn f) {
    double h = 1e-6, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        for (int i = 0; i < SZ; i++)
            A[i] = A0[i] + side * h * vA[i];
        s += side * f(A, CFG, NN);
    }
    return s / (2 * h);
}

#define REV(f)                                                                                                   \
    do {                                                                                                       \
        memcpy(A, A0, sizeof A), memset(dA, 0, sizeof dA);                                                     \
        __enzyme_autodiff((void *)f, enzyme_dup, A, dA, CFG, NN);                                              \
        double got = 0;                                                                                        \
        for (int i = 0; i < SZ; i++)                                                                           \
            got += dA[i] * vA[i];                                                                              \
        check(#f " reverse", CFG, got, fd(f), 1e-6);                                                           \
    } while (0)
#define FWD(f)                                                                                                   \
    do {                                                                                                       \
        memcpy(A, A0, sizeof A), memcpy(dA, vA, sizeof dA);                                                    \
        check(#f " forward", CFG, __enzyme_fwddiff((void *)f, enzyme_dup, A, dA, CFG, NN), fd(f), 1e-6);       \
    } while (0)

static float l_float(float *A, int n) {
    int lwork = 200, liwork = 64, iwork[64], info;
    float w[8], work[200];
    ssyevd_("V", "L", &n, A, &n, w, work, &lwork, iwork, &liwork, &info);
    float s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0f + 0.5f * i) * w[i];
    for (int i = 0; i < n * n; i++)
        s += 0.25f * (1.0f + 0.1f * i) * A[i];
    return s;
}
static double l_float_twin(double *A, int n) {
    int lwork = 200, liwork = 64, iwork[64], info;
    double w[8], work[200];
    dsyevd_("V", "L", &n, A, &n, w, work, &lwork, iwork, &liwork, &info);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += (1.0 + 0.5 * i) * w[i];
    for (int i = 0; i < n * n; i++)
        s += 0.25 * (1.0 + 0.1 * i) * A[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    NN = argc + 3; /* 4 */
    for (int i = 0; i < SZ; i++)
        A0[i] = sin(1.7 * i + 0.3) + 0.2 * cos(0.5 * i), vA[i] = 0.3 * sin(1.3 * i);
    for (CFG = 0; CFG < 4; CFG++) {
        REV(l_syev);
        FWD(l_syev);
        REV(l_syevd);
        FWD(l_syevd);
    }

    /* a repeated eigenvalue (A = 2 I): the trace's adjoint is 1 on the diagonal */
    {
        memset(A, 0, sizeof A), memset(dA, 0, sizeof dA);
        for (int i = 0; i < NN; i++)
            A[i * (NN + 2)] = 2;
        __enzyme_autodiff((void *)l_trace, enzyme_dup, A, dA, 1, NN);
        double s = 0, diagonal = 0;
        for (int i = 0; i < SZ; i++)
            s += fabs(dA[i]);
        for (int i = 0; i < NN; i++)
            diagonal += dA[i * (NN + 2)];
        check("repeated eigenvalue: trace adjoint", NN, diagonal, NN, 1e-12);
        check("repeated eigenvalue: nothing off the diagonal", NN, s, NN, 1e-12);
    }

    /* float: ssyevd_, jobz 'V' */
    {
        float fA[SZ], fdA[SZ];
        double want = 0, h = 1e-6;
        int n = NN;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                A[i] = (float)A0[i] + side * h * vA[i];
            want += side * l_float_twin(A, n) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fdA[i] = 0;
        __enzyme_autodiff_f((void *)l_float, enzyme_dup, fA, fdA, n);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i];
        check("ssyevd_ reverse", n, got, want, 1e-3);
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fdA[i] = (float)vA[i];
        check("ssyevd_ forward", n, __enzyme_fwddiff_f((void *)l_float, enzyme_dup, fA, fdA, n), want, 1e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
