/* LAPACK's singular value decomposition differentiated at the level of the call, by a
   matrix-level rule (issue 26 item 2): dgesdd_ after its workspace query, with jobz 'S'
   on square, tall and wide matrices (singular values and vectors used), 'N' (values
   only) and 'A' (the thin part of the full U and V^T used), in reverse and forward mode
   against a central finite difference along a direction; a matrix with a repeated
   singular value (2 I), whose singular values' sum keeps its derivative (I); sgesdd_ in
   float against a central difference of the same steps in double. */
#include <stdio.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dgesdd_(const char *, const int *, const int *, double *, const int *, double *, double *, const int *, double *,
             const int *, double *, const int *, int *, int *);
void sgesdd_(const char *, const int *, const int *, float *, const int *, float *, float *, const int *, float *,
             const int *, float *, const int *, int *, int *);

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

/* job: 0 'N', 1 'S', 2 'A'; lda = m + 1; the loss reads the singular values and the thin
   U (m x k) and V^T (k x n) */
static double l_svd(double *A, int job, int m, int n) {
    int k = m < n ? m : n, lda = m + 1, ldu = m, ldvt = job == 2 ? n : k, lwork = -1, iwork[40], info;
    double s[8], U[32], VT[32], query, work[400];
    const char *jobz = job == 0 ? "N" : job == 1 ? "s" : "A";
    dgesdd_(jobz, &m, &n, A, &lda, s, U, &ldu, VT, &ldvt, &query, &lwork, iwork, &info);
    lwork = (int)query;
    dgesdd_(jobz, &m, &n, A, &lda, s, U, &ldu, VT, &ldvt, work, &lwork, iwork, &info);
    double r = 2.0 * wsum(s, k);
    if (job)
        for (int j = 0; j < k; j++) {
            for (int i = 0; i < m; i++)
                r += (0.3 + 0.1 * i - 0.05 * j) * U[i + j * ldu];
            for (int i = 0; i < n; i++)
                r += (0.2 - 0.07 * i + 0.11 * j) * VT[j + i * ldvt];
        }
    return r;
}
/* the sum of the singular values (values only) */
static double l_nuclear(double *A, int job, int m, int n) {
    (void)job;
    int lda = m + 1, one = 1, lwork = 200, iwork[40], info;
    double s[8], work[200];
    dgesdd_("N", &m, &n, A, &lda, s, 0, &one, 0, &one, work, &lwork, iwork, &info);
    double r = 0;
    for (int i = 0; i < (m < n ? m : n); i++)
        r += s[i];
    return r;
}

typedef double (*loss_fn)(double *, int, int, int);

static double A0[SZ], vA[SZ], A[SZ], dA[SZ];
static int JOB, MM, NN;

static double fd(loss_fn f) {
    double h = 1e-6, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        for (int i = 0; i < SZ; i++)
            A[i] = A0[i] + side * h * vA[i];
        s += side * f(A, JOB, MM, NN);
    }
    return s / (2 * h);
}

#define REV(f)                                                                                                   \
    do {                                                                                                       \
        memcpy(A, A0, sizeof A), memset(dA, 0, sizeof dA);                                                     \
        __enzyme_autodiff((void *)f, enzyme_dup, A, dA, JOB, MM, NN);                                          \
        double got = 0;                                                                                        \
        for (int i = 0; i < SZ; i++)                                                                           \
            got += dA[i] * vA[i];                                                                              \
        check(#f " reverse", JOB * 100 + MM * 10 + NN, got, fd(f), 1e-6);                                      \
    } while (0)
#define FWD(f)                                                                                                   \
    do {                                                                                                       \
        memcpy(A, A0, sizeof A), memcpy(dA, vA, sizeof dA);                                                    \
        check(#f " forward", JOB * 100 + MM * 10 + NN, __enzyme_fwddiff((void *)f, enzyme_dup, A, dA, JOB, MM, NN), \
              fd(f), 1e-6);                                                                                    \
    } while (0)

static float l_float(float *A, int m, int n) {
    int k = m < n ? m : n, lwork = 200, iwork[40], info;
    float s[8], U[32], VT[32], work[200];
    sgesdd_("S", &m, &n, A, &m, s, U, &m, VT, &k, work, &lwork, iwork, &info);
    float r = 0;
    for (int i = 0; i < k; i++)
        r += (1.0f + 0.5f * i) * s[i];
    for (int i = 0; i < m * k; i++)
        r += (0.3f + 0.1f * i) * U[i];
    for (int i = 0; i < k * n; i++)
        r += (0.2f - 0.07f * i) * VT[i];
    return r;
}
static double l_float_twin(double *A, int m, int n) {
    int k = m < n ? m : n, lwork = 200, iwork[40], info;
    double s[8], U[32], VT[32], work[200];
    dgesdd_("S", &m, &n, A, &m, s, U, &m, VT, &k, work, &lwork, iwork, &info);
    double r = 0;
    for (int i = 0; i < k; i++)
        r += (1.0 + 0.5 * i) * s[i];
    for (int i = 0; i < m * k; i++)
        r += (0.3 + 0.1 * i) * U[i];
    for (int i = 0; i < k * n; i++)
        r += (0.2 - 0.07 * i) * VT[i];
    return r;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3; /* 4 */
    for (int i = 0; i < SZ; i++)
        A0[i] = sin(1.7 * i + 0.3) + 0.2 * cos(0.5 * i), vA[i] = 0.3 * sin(1.3 * i);
    int cases[][3] = {{1, n, n}, {1, n + 1, n - 1}, {1, n - 1, n + 1}, {0, n + 1, n - 1}, {2, n, n}, {2, n + 1, n - 1}};
    for (int c = 0; c < 6; c++) {
        JOB = cases[c][0], MM = cases[c][1], NN = cases[c][2];
        REV(l_svd);
        FWD(l_svd);
    }

    /* a repeated singular value (A = 2 I): the adjoint of their sum is I */
    {
        memset(A, 0, sizeof A), memset(dA, 0, sizeof dA);
        for (int i = 0; i < n; i++)
            A[i * (n + 2)] = 2;
        __enzyme_autodiff((void *)l_nuclear, enzyme_dup, A, dA, 0, n, n);
        double diagonal = 0, all = 0;
        for (int i = 0; i < n; i++)
            diagonal += dA[i * (n + 2)];
        for (int i = 0; i < SZ; i++)
            all += fabs(dA[i]);
        check("repeated singular value: diagonal", n, diagonal, n, 1e-12);
        check("repeated singular value: nothing else", n, all, n, 1e-12);
    }

    /* float: sgesdd_, jobz 'S', tall */
    {
        float fA[SZ], fdA[SZ];
        double want = 0, h = 1e-6;
        int m = n + 1, nn = n - 1;
        for (int side = -1; side <= 1; side += 2) {
            for (int i = 0; i < SZ; i++)
                A[i] = (float)A0[i] + side * h * vA[i];
            want += side * l_float_twin(A, m, nn) / (2 * h);
        }
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fdA[i] = 0;
        __enzyme_autodiff_f((void *)l_float, enzyme_dup, fA, fdA, m, nn);
        double got = 0;
        for (int i = 0; i < SZ; i++)
            got += fdA[i] * vA[i];
        check("sgesdd_ reverse", m, got, want, 1e-3);
        for (int i = 0; i < SZ; i++)
            fA[i] = (float)A0[i], fdA[i] = (float)vA[i];
        check("sgesdd_ forward", m, __enzyme_fwddiff_f((void *)l_float, enzyme_dup, fA, fdA, m, nn), want, 1e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
