/* Float matrix-vector products: y = A x into a float *out shadow, a float bilinear form with a float result in forward mode, run-time sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-8

#define FTOL 1e-4

extern float __enzyme_fwddiff_f(void *, ...);

static void smatvec(const float *A, const float *x, float *y, int m, int n) {
    for (int i = 0; i < m; i++) {
        float s = 0.0f;
        for (int j = 0; j < n; j++)
            s += A[i * n + j] * x[j];
        y[i] = s;
    }
}

/* u^T A v */
static float bilinear(const float *u, const float *A, const float *v, int m, int n) {
    float s = 0.0f;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++)
            s += u[i] * A[i * n + j] * v[j];
    return s;
}

#define MAXN 16

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 3, n = argc + 1; /* 4 x 2 */
    float A[MAXN * MAXN], dA[MAXN * MAXN], tA[MAXN * MAXN], x[MAXN], dx[MAXN], tx[MAXN];
    float y[MAXN], dy[MAXN], u[MAXN], du[MAXN], tu[MAXN];
    for (int k = 0; k < m * n; k++) {
        A[k] = 0.5f - 0.125f * (float)k;
        tA[k] = (k % 2) ? 0.25f : -0.5f;
    }
    for (int j = 0; j < n; j++) { x[j] = 1.5f - (float)j; tx[j] = 0.5f; }
    for (int i = 0; i < m; i++) { u[i] = 0.25f * (float)(i + 1); tu[i] = 1.0f - 0.5f * (float)i; }

    for (int k = 0; k < m * n; k++) dA[k] = 0.0f;
    for (int j = 0; j < n; j++) dx[j] = 0.0f;
    for (int i = 0; i < m; i++) dy[i] = 1.0f + (float)i;
    __enzyme_autodiff((void *)smatvec, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, m, n);
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++)
            check("smatvec dA", i * n + j, dA[i * n + j], (1.0 + i) * x[j], FTOL);
        check("smatvec dy zeroed", i, dy[i], 0.0, FTOL);
    }
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += (double)A[i * n + j] * (1.0 + i);
        check("smatvec dx", j, dx[j], want, FTOL);
    }

    for (int i = 0; i < m; i++) dy[i] = 0.0f;
    __enzyme_fwddiff((void *)smatvec, enzyme_const, A, enzyme_dup, x, tx, enzyme_dup, y, dy, m, n);
    for (int i = 0; i < m; i++) {
        double want = 0.0;
        for (int j = 0; j < n; j++) want += (double)A[i * n + j] * tx[j];
        check("smatvec forward (A const)", i, dy[i], want, FTOL);
    }

    /* bilinear: du = A v, dv = A^T u, A constant */
    for (int i = 0; i < m; i++) du[i] = 0.0f;
    for (int j = 0; j < n; j++) dx[j] = 0.0f;
    __enzyme_autodiff((void *)bilinear, enzyme_dup, u, du, enzyme_const, A, enzyme_dup, x, dx, m, n);
    double fwd = 0.0;
    for (int i = 0; i < m; i++) {
        double want = 0.0;
        for (int j = 0; j < n; j++) {
            want += (double)A[i * n + j] * x[j];
            fwd += (double)u[i] * tA[i * n + j] * x[j];
        }
        check("bilinear du = A v", i, du[i], want, FTOL);
        fwd += want * tu[i];
    }
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += (double)A[i * n + j] * u[i];
        check("bilinear dv = A^T u", j, dx[j], want, FTOL);
    }
    check("bilinear forward (u, A)", m, __enzyme_fwddiff_f((void *)bilinear, enzyme_dup, u, tu, enzyme_dup, A, tA, enzyme_const, x, m, n), fwd, FTOL);

    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
