/* LAPACK's Cholesky factorization and solve differentiated at the level of the call, by
   matrix-level rules (issue 26 item 2): dpotrf_ in place, upper and lower, alone and
   followed by dpotrs_ (the factor and the right-hand sides active or constant), in
   reverse and forward mode against a central finite difference along a direction that
   is zero on the constant arguments (the triangle potrf does not read is passed through
   unchanged, and its derivative with it); spotrf_/spotrs_ in float; a matrix that is not
   positive definite gives NaN derivatives, not numbers. */
#include <stdio.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);
extern float __enzyme_fwddiff_f(void *, ...);
extern int enzyme_const, enzyme_dup;

void dpotrf_(const char *, const int *, double *, const int *, int *);
void dpotrs_(const char *, const int *, const int *, const double *, const int *, double *, const int *, int *);
void spotrf_(const char *, const int *, float *, const int *, int *);
void spotrs_(const char *, const int *, const int *, const float *, const int *, float *, const int *, int *);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-40s at %-6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define SZ 48

static double wsum(const double *y) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += (0.5 + 0.125 * i) * y[i];
    return s;
}

/* (A, B) and the configuration: uplo ('U' or 'L'), n, nrhs; lda = n + 1, ldb = n + 2 */
static double l_chol(double *A, double *B, int upper, int n, int nrhs) {
    (void)B, (void)nrhs;
    int lda = n + 1, info;
    dpotrf_(upper ? "U" : "L", &n, A, &lda, &info);
    return wsum(A);
}
static double l_solve(double *A, double *B, int upper, int n, int nrhs) {
    int lda = n + 1, ldb = n + 2, info;
    dpotrf_(upper ? "u" : "l", &n, A, &lda, &info);
    dpotrs_(upper ? "U" : "L", &n, &nrhs, A, &lda, B, &ldb, &info);
    return wsum(B) + 0.5 * wsum(A);
}

typedef double (*loss_fn)(double *, double *, int, int, int);

static double A0[SZ], B0[SZ], vA[SZ], vB[SZ];
static double A[SZ], B[SZ], dA[SZ], dB[SZ];
static int UP, NN, NRHS;

static void reset(void) {
    memcpy(A, A0, sizeof A), memcpy(B, B0, sizeof B), memset(dA, 0, sizeof dA), memset(dB, 0, sizeof dB);
}

static double fd(loss_fn f, int aA, int aB) {
    double h = 1e-5, s = 0;
    for (int side = -1; side <= 1; side += 2) {
        reset();
        for (int i = 0; i < SZ; i++)
            A[i] += aA * side * h * vA[i], B[i] += aB * side * h * vB[i];
        s += side * f(A, B, UP, NN, NRHS);
    }
    return s / (2 * h);
}

static double projected(int aA, int aB) {
    double s = 0;
    for (int i = 0; i < SZ; i++)
        s += aA * dA[i] * vA[i] + aB * dB[i] * vB[i];
    return s;
}

#define DUP(v) enzyme_dup, &v[0], &d##v[0]
#define CONST(v) enzyme_const, &v[0]
#define ON_DUP 1
#define ON_CONST 0
#define REV(f, SA, SB)                                                                                           \
    do {                                                                                                       \
        reset();                                                                                               \
        __enzyme_autodiff((void *)f, SA(A), SB(B), UP, NN, NRHS);                                              \
        check(#f " reverse " #SA " " #SB, UP, projected(ON_##SA, ON_##SB), fd(f, ON_##SA, ON_##SB), 1e-6);      \
    } while (0)
#define FWD(f, SA, SB)                                                                                           \
    do {                                                                                                       \
        reset();                                                                                               \
        memcpy(dA, vA, sizeof dA), memcpy(dB, vB, sizeof dB);                                                  \
        double t = __enzyme_fwddiff((void *)f, SA(A), SB(B), UP, NN, NRHS);                                    \
        check(#f " forward " #SA " " #SB, UP, t, fd(f, ON_##SA, ON_##SB), 1e-6);                                \
    } while (0)

static float l_solve_s(float *A, float *B, int n, int nrhs) {
    int info;
    spotrf_("L", &n, A, &n, &info);
    spotrs_("L", &n, &nrhs, A, &n, B, &n, &info);
    float s = 0;
    for (int i = 0; i < n * nrhs; i++)
        s += (1.0f + 0.5f * i) * B[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    NN = argc + 3, NRHS = argc + 1; /* 4, 2 */
    /* A = M M^T + n I (symmetric positive definite) in an lda = n + 1 buffer */
    double M[16];
    for (int i = 0; i < 16; i++)
        M[i] = sin(0.9 * i + 0.4);
    for (int i = 0; i < SZ; i++) {
        A0[i] = 0.1 * i, B0[i] = cos(0.3 * i - 0.1);
        vA[i] = 0.3 * sin(1.3 * i), vB[i] = 0.2 * cos(0.9 * i + 1);
    }
    for (int i = 0; i < NN; i++)
        for (int j = 0; j < NN; j++) {
            double s = i == j ? NN : 0;
            for (int k = 0; k < NN; k++)
                s += M[i * 4 + k] * M[j * 4 + k];
            A0[i + j * (NN + 1)] = s;
        }
    for (UP = 0; UP <= 1; UP++) {
        REV(l_chol, DUP, CONST);
        FWD(l_chol, DUP, CONST);
        REV(l_solve, DUP, DUP);
        REV(l_solve, CONST, DUP);
        FWD(l_solve, DUP, DUP);
        FWD(l_solve, CONST, DUP);
    }

    /* not positive definite: the derivative is NaN */
    {
        UP = 0;
        reset();
        A[0] = -1.0;
        __enzyme_autodiff((void *)l_chol, DUP(A), CONST(B), UP, NN, NRHS);
        int nan = 0;
        for (int i = 0; i < SZ; i++)
            nan += dA[i] != dA[i];
        check("indefinite A: NaN adjoints on its triangle", 0, nan, NN * (NN + 1) / 2, 0);
    }

    /* float: spotrf_ and spotrs_, all active, against a float central difference */
    {
        int n = NN, nrhs = NRHS;
        float fA[SZ], fB[SZ], fdA[SZ], fdB[SZ], want = 0, h = 1e-2f;
        for (int side = -1; side <= 1; side += 2) {
            for (int j = 0; j < n; j++)
                for (int i = 0; i < n; i++)
                    fA[i + j * n] = (float)(A0[i + j * (n + 1)] + side * h * vA[i + j * n]);
            for (int i = 0; i < SZ; i++)
                fB[i] = (float)(B0[i] + side * h * vB[i]);
            want += side * l_solve_s(fA, fB, n, nrhs) / (2 * h);
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                fA[i + j * n] = (float)A0[i + j * (n + 1)], fdA[i + j * n] = 0;
        for (int i = 0; i < SZ; i++)
            fB[i] = (float)B0[i], fdB[i] = 0;
        __enzyme_autodiff_f((void *)l_solve_s, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, n, nrhs);
        double got = 0;
        for (int i = 0; i < n * n; i++)
            got += fdA[i] * vA[i];
        for (int i = 0; i < SZ; i++)
            got += fdB[i] * vB[i];
        check("spotrf_, spotrs_ reverse", n, got, want, 2e-3);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++)
                fA[i + j * n] = (float)A0[i + j * (n + 1)], fdA[i + j * n] = (float)vA[i + j * n];
        for (int i = 0; i < SZ; i++)
            fB[i] = (float)B0[i], fdB[i] = (float)vB[i];
        check("spotrf_, spotrs_ forward", n,
              __enzyme_fwddiff_f((void *)l_solve_s, enzyme_dup, fA, fdA, enzyme_dup, fB, fdB, n, nrhs), want, 2e-3);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
