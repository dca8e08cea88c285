/* 2-D five-point stencil (Jacobi sweeps with asymmetric weights) on malloc'd buffers swapped by pointer, result in an *out parameter: reverse with a seeded output against the scattered transpose, forward by linearity. */
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

/* interior: b = C0 a + CN a[north] + CS a[south] + CE a[east] + CW a[west]; boundary fixed */
#define C0 0.4
#define CN 0.1
#define CS 0.2
#define CE 0.18
#define CW 0.12

static void jacobi2d(const double *u0, double *out, int nx, int ny, int steps) {
    int N = nx * ny;
    double *a = malloc(N * sizeof(double)), *b = malloc(N * sizeof(double));
    memcpy(a, u0, N * sizeof(double));
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < ny; i++)
            for (int j = 0; j < nx; j++) {
                int c = i * nx + j;
                if (i == 0 || j == 0 || i == ny - 1 || j == nx - 1)
                    b[c] = a[c];
                else
                    b[c] = C0 * a[c] + CN * a[c - nx] + CS * a[c + nx] + CE * a[c + 1] + CW * a[c - 1];
            }
        double *t = a;
        a = b;
        b = t;
    }
    for (int c = 0; c < N; c++) out[c] = a[c];
    free(a);
    free(b);
}

#define NMAX 64

/* one transposed step: every cell scatters its adjoint to the cells it was computed from */
static void adjoint_step(const double *lam, double *res, int nx, int ny) {
    for (int c = 0; c < nx * ny; c++) res[c] = 0.0;
    for (int i = 0; i < ny; i++)
        for (int j = 0; j < nx; j++) {
            int c = i * nx + j;
            if (i == 0 || j == 0 || i == ny - 1 || j == nx - 1) {
                res[c] += lam[c];
                continue;
            }
            res[c] += C0 * lam[c];
            res[c - nx] += CN * lam[c];
            res[c + nx] += CS * lam[c];
            res[c + 1] += CE * lam[c];
            res[c - 1] += CW * lam[c];
        }
}

int main(int argc, char **argv) {
    (void)argv;
    int nx = argc + 4, ny = argc + 3, steps = argc + 5; /* 5 x 4 grid, 6 steps */
    int N = nx * ny;
    double u0[NMAX], out[NMAX], du0[NMAX], dout[NMAX], W[NMAX], lam[NMAX], tmp[NMAX], t[NMAX], tout[NMAX], want[NMAX];
    for (int c = 0; c < N; c++) {
        u0[c] = sin(0.37 * c) + 0.2;
        W[c] = 1.0 + 0.05 * c;
        t[c] = (c % 3) - 0.5;
    }
    for (int c = 0; c < N; c++) { du0[c] = 0.0; dout[c] = W[c]; }
    __enzyme_autodiff((void *)jacobi2d, enzyme_dup, u0, du0, enzyme_dup, out, dout, nx, ny, steps);
    for (int c = 0; c < N; c++) lam[c] = W[c];
    for (int s = 0; s < steps; s++) {
        adjoint_step(lam, tmp, nx, ny);
        for (int c = 0; c < N; c++) lam[c] = tmp[c];
    }
    for (int c = 0; c < N; c++) {
        check("jacobi2d du0", c, du0[c], lam[c], TOL);
        check("jacobi2d dout zeroed", c, dout[c], 0.0, TOL);
    }

    /* forward: the map is linear, so the tangent of out is jacobi2d applied to the tangent */
    jacobi2d(t, want, nx, ny, steps);
    for (int c = 0; c < N; c++) tout[c] = 0.0;
    __enzyme_fwddiff((void *)jacobi2d, enzyme_dup, u0, t, enzyme_dupnoneed, out, tout, nx, ny, steps);
    for (int c = 0; c < N; c++)
        check("jacobi2d forward (out dupnoneed)", c, tout[c], want[c], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
