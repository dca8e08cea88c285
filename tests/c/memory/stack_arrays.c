/* Stack arrays (allocas) holding active data inside the function: a 3x3 determinant through a local matrix (gradient = cofactors), a cross product via local vectors into an *out parameter, a sliding local window; reverse and forward. */
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

static double det3(const double *a) {
    double m[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            m[i][j] = a[3 * i + j];
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
         - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
         + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

/* c = a x b with local copies */
static void cross(const double *a, const double *b, double *c) {
    double u[3], v[3], r[3];
    for (int i = 0; i < 3; i++) { u[i] = a[i]; v[i] = b[i]; }
    for (int i = 0; i < 3; i++)
        r[i] = u[(i + 1) % 3] * v[(i + 2) % 3] - u[(i + 2) % 3] * v[(i + 1) % 3];
    for (int i = 0; i < 3; i++) c[i] = r[i];
}

/* a window of 4 values shifted through a local array; sum of products of window ends */
static double window(const double *x, int n) {
    double win[4] = {0.0, 0.0, 0.0, 0.0}, s = 0.0;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) win[k] = win[k + 1];
        win[3] = x[i];
        s += win[0] * win[3];
    }
    return s;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    double a[9], da[9], ta[9];
    for (int k = 0; k < 9; k++) { a[k] = sin(1.3 * k + 0.5) + (k % 4 == 0 ? 1.5 : 0.0); da[k] = 0.0; ta[k] = 0.1 * k - 0.3; }
    __enzyme_autodiff((void *)det3, enzyme_dup, a, da);
    double fwd = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            int r1 = (i + 1) % 3, r2 = (i + 2) % 3, c1 = (j + 1) % 3, c2 = (j + 2) % 3;
            double cof = a[3 * r1 + c1] * a[3 * r2 + c2] - a[3 * r1 + c2] * a[3 * r2 + c1];
            check("det3 d/da = cofactor", 3 * i + j, da[3 * i + j], cof, TOL);
            fwd += cof * ta[3 * i + j];
        }
    check("det3 forward", 9, __enzyme_fwddiff((void *)det3, enzyme_dup, a, ta), fwd, TOL);

    double u[3] = {0.5, -1.0, 2.0}, v[3] = {1.5, 0.25, -0.75}, c[3], du[3] = {0, 0, 0}, dv[3] = {0, 0, 0};
    double w[3] = {1.0, -2.0, 0.5}, dc[3] = {1.0, -2.0, 0.5}, tu[3] = {0.1, 0.2, 0.3}, tv[3] = {-1.0, 0.0, 1.0};
    __enzyme_autodiff((void *)cross, enzyme_dup, u, du, enzyme_dup, v, dv, enzyme_dup, c, dc);
    /* w . (u x v): d/du = v x w, d/dv = w x u */
    for (int i = 0; i < 3; i++) {
        int p = (i + 1) % 3, q = (i + 2) % 3;
        check("cross du = v x w", i, du[i], v[p] * w[q] - v[q] * w[p], TOL);
        check("cross dv = w x u", i, dv[i], w[p] * u[q] - w[q] * u[p], TOL);
        check("cross dc zeroed", i, dc[i], 0.0, TOL);
    }
    __enzyme_fwddiff((void *)cross, enzyme_dup, u, tu, enzyme_dup, v, tv, enzyme_dup, c, dc);
    for (int i = 0; i < 3; i++) {
        int p = (i + 1) % 3, q = (i + 2) % 3;
        double want = tu[p] * v[q] - tu[q] * v[p] + u[p] * tv[q] - u[q] * tv[p];
        check("cross forward", i, dc[i], want, TOL);
    }

    int n = argc + 9; /* 10 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) { x[i] = cos(0.7 * i) + 0.2; dx[i] = 0.0; t[i] = 0.05 * i; }
    /* s = sum_{i>=3} x_{i-3} x_i */
    __enzyme_autodiff((void *)window, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = (i >= 3 ? x[i - 3] : 0.0) + (i + 3 < n ? x[i + 3] : 0.0);
        check("window dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("window forward", n, __enzyme_fwddiff((void *)window, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
