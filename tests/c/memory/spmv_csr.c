/* Sparse matrix-vector product in CSR form: int row pointers and column indices (constant), active values and x; y = A x into an *out array and x^T A x; reverse and forward. */
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

static void spmv(const int *rowptr, const int *col, const double *val, const double *x, double *y, int m) {
    for (int i = 0; i < m; i++) {
        double s = 0.0;
        for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
            s += val[k] * x[col[k]];
        y[i] = s;
    }
}

static double sp_quad(const int *rowptr, const int *col, const double *val, const double *x, int m) {
    double s = 0.0;
    for (int i = 0; i < m; i++)
        for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
            s += x[i] * val[k] * x[col[k]];
    return s;
}

#define NMAX 64

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 5; /* 6 x 6, a band with a few extra entries */
    int rowptr[NMAX], col[NMAX], nnz = 0;
    double val[NMAX], dval[NMAX], tval[NMAX], x[NMAX], dx[NMAX], tx[NMAX], y[NMAX], dy[NMAX], w[NMAX];
    double D[NMAX][NMAX];
    for (int i = 0; i < m; i++) {
        rowptr[i] = nnz;
        for (int j = 0; j < m; j++) {
            D[i][j] = 0.0;
            if (j == i || j == i + 1 || (i + 2 * j) % 5 == 0) {
                col[nnz] = j;
                val[nnz] = D[i][j] = sin(0.8 * nnz + 0.1) + (i == j ? 1.0 : 0.0);
                tval[nnz] = 0.1 * (nnz % 4);
                nnz++;
            }
        }
    }
    rowptr[m] = nnz;
    for (int i = 0; i < m; i++) { x[i] = 1.0 - 0.3 * i; tx[i] = 0.2 * i; w[i] = 1.0 + 0.5 * i; }

    for (int k = 0; k < nnz; k++) dval[k] = 0.0;
    for (int i = 0; i < m; i++) { dx[i] = 0.0; dy[i] = w[i]; }
    __enzyme_autodiff((void *)spmv, enzyme_const, rowptr, enzyme_const, col, enzyme_dup, val, dval, enzyme_dup, x, dx, enzyme_dup, y, dy, m);
    for (int i = 0; i < m; i++) {
        for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
            check("spmv dval = w_i x_col", k, dval[k], w[i] * x[col[k]], TOL);
        double want = 0.0;
        for (int r = 0; r < m; r++) want += D[r][i] * w[r];
        check("spmv dx = A^T w", i, dx[i], want, TOL);
        check("spmv dy zeroed", i, dy[i], 0.0, TOL);
    }
    for (int i = 0; i < m; i++) dy[i] = 0.0;
    __enzyme_fwddiff((void *)spmv, enzyme_const, rowptr, enzyme_const, col, enzyme_dup, val, tval, enzyme_dup, x, tx, enzyme_dup, y, dy, m);
    for (int i = 0; i < m; i++) {
        double want = 0.0;
        for (int k = rowptr[i]; k < rowptr[i + 1]; k++) want += tval[k] * x[col[k]] + val[k] * tx[col[k]];
        check("spmv forward", i, dy[i], want, TOL);
    }
    /* x^T A x with the values constant: dx = (A + A^T) x */
    for (int i = 0; i < m; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)sp_quad, enzyme_const, rowptr, enzyme_const, col, enzyme_const, val, enzyme_dup, x, dx, m);
    double fwd = 0.0;
    for (int i = 0; i < m; i++) {
        double want = 0.0;
        for (int j = 0; j < m; j++) want += (D[i][j] + D[j][i]) * x[j];
        check("sp_quad dx", i, dx[i], want, TOL);
        fwd += want * tx[i];
    }
    check("sp_quad forward", m, __enzyme_fwddiff((void *)sp_quad, enzyme_const, rowptr, enzyme_const, col, enzyme_const, val, enzyme_dup, x, tx, m), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
