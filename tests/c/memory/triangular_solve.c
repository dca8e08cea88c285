/* Forward substitution L y = b overwriting b in place (lower-triangular L, run-time size): reverse with the seeded b gives db = L^-T w and dL = -(L^-T w) y^T; forward gives L^-1 (tb - tL y). */
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

static void trsv_lower(const double *L, double *b, int n) {
    for (int i = 0; i < n; i++) {
        double s = b[i];
        for (int j = 0; j < i; j++)
            s -= L[i * n + j] * b[j];
        b[i] = s / L[i * n + i];
    }
}

#define NMAX 12

/* reference solves written independently: column-oriented forward and backward substitution */
static void solve_lower(const double *L, const double *rhs, double *y, int n) {
    for (int i = 0; i < n; i++) y[i] = rhs[i];
    for (int j = 0; j < n; j++) {
        y[j] /= L[j * n + j];
        for (int i = j + 1; i < n; i++) y[i] -= L[i * n + j] * y[j];
    }
}
static void solve_upper_transposed(const double *L, const double *rhs, double *z, int n) {
    for (int i = n - 1; i >= 0; i--) {
        double s = rhs[i];
        for (int k = i + 1; k < n; k++) s -= L[k * n + i] * z[k];
        z[i] = s / L[i * n + i];
    }
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* 6 */
    double L[NMAX * NMAX], dL[NMAX * NMAX], tL[NMAX * NMAX], b0[NMAX], b[NMAX], db[NMAX], w[NMAX];
    double y[NMAX], lam[NMAX], tb[NMAX], rhs[NMAX], ty[NMAX];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            L[i * n + j] = j < i ? 0.3 * sin(1.0 * i + 2.0 * j) : j == i ? 2.0 + 0.1 * i : 0.0;
            tL[i * n + j] = j <= i ? 0.05 * ((i + j) % 3) - 0.04 : 0.0;
        }
        b0[i] = 1.0 - 0.2 * i;
        w[i] = 0.5 + 0.25 * i;
        tb[i] = cos(i);
    }
    solve_lower(L, b0, y, n);
    solve_upper_transposed(L, w, lam, n);

    for (int k = 0; k < n * n; k++) dL[k] = 0.0;
    for (int i = 0; i < n; i++) { b[i] = b0[i]; db[i] = w[i]; }
    __enzyme_autodiff((void *)trsv_lower, enzyme_dup, L, dL, enzyme_dup, b, db, n);
    for (int i = 0; i < n; i++) {
        check("trsv db = L^-T w", i, db[i], lam[i], TOL);
        check("trsv primal y", i, b[i], y[i], TOL);
        for (int j = 0; j <= i; j++)
            check("trsv dL = -lam y^T", i * n + j, dL[i * n + j], -lam[i] * y[j], TOL);
    }
    for (int i = 0; i < n; i++) { b[i] = b0[i]; db[i] = w[i]; }
    __enzyme_autodiff((void *)trsv_lower, enzyme_const, L, enzyme_dup, b, db, n);
    for (int i = 0; i < n; i++)
        check("trsv db (L const)", i, db[i], lam[i], TOL);

    /* forward: ty = L^-1 (tb - tL y) */
    for (int i = 0; i < n; i++) {
        rhs[i] = tb[i];
        for (int j = 0; j <= i; j++) rhs[i] -= tL[i * n + j] * y[j];
    }
    solve_lower(L, rhs, ty, n);
    for (int i = 0; i < n; i++) { b[i] = b0[i]; db[i] = tb[i]; }
    __enzyme_fwddiff((void *)trsv_lower, enzyme_dup, L, tL, enzyme_dup, b, db, n);
    for (int i = 0; i < n; i++)
        check("trsv forward", i, db[i], ty[i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
