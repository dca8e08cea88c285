// OpenMP (issue 27 item 1): nested loops. A parallel loop over rows with a serial inner
// loop over columns (every row reads all of x: shared adjoints), and a 'collapse(2)'
// loop nest (one worksharing loop over the linearized index). Reverse and forward mode
// against the serial twins' derivatives and central finite differences; OMP_NUM_THREADS=1, 2, 4.
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { N = 40 };

// y[i] = tanh(sum_j A[i][j] x[j]), then z[i][j] = y[i] * x[j] (collapsed)
void layer_par(const double *A, const double *x, double *y, double *z, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += A[i * n + j] * x[j];
        y[i] = tanh(s);
    }
#pragma omp parallel for collapse(2)
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) z[i * n + j] = y[i] * x[j];
}

void layer_ser(const double *A, const double *x, double *y, double *z, int n) {
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += A[i * n + j] * x[j];
        y[i] = tanh(s);
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) z[i * n + j] = y[i] * x[j];
}

static double weight(int k) { return sin(0.1 * k) + 0.5; }

static double loss(const double *A, const double *x, int n) {
    double y[N], z[N * N], s = 0;
    layer_par(A, x, y, z, n);
    for (int k = 0; k < n * n; k++) s += z[k] * weight(k);
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 2 + argc;
    static double A[N * N], dA[N * N], dAs[N * N], z[N * N], dz[N * N], dzs[N * N];
    double x[N], dx[N] = {0}, dxs[N] = {0}, y[N], dy[N] = {0}, dys[N] = {0};
    for (int k = 0; k < n * n; k++) {
        A[k] = 0.05 * sin(0.7 * k);
        dz[k] = dzs[k] = weight(k);
    }
    for (int j = 0; j < n; j++) x[j] = 0.3 * cos(0.2 * j);
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    __enzyme_autodiff((void *)layer_par, enzyme_dup, A, dA, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_dup, z, dz,
                      enzyme_const, n);
    __enzyme_autodiff((void *)layer_ser, enzyme_dup, A, dAs, enzyme_dup, x, dxs, enzyme_dup, y, dys, enzyme_dup, z,
                      dzs, enzyme_const, n);
    for (int j = 0; j < n; j++) check("reverse d/dx vs serial", j, dx[j], dxs[j], 1e-12);
    for (int k = 0; k < n * n; k++) check("reverse d/dA vs serial", k, dA[k], dAs[k], 1e-12);
    double h = 1e-6;
    for (int j = 0; j < n; j += 7) {
        double xp[N], xm[N];
        for (int k = 0; k < n; k++) xp[k] = xm[k] = x[k];
        xp[j] += h;
        xm[j] -= h;
        check("reverse d/dx vs finite difference", j, dx[j], (loss(A, xp, n) - loss(A, xm, n)) / (2 * h), 1e-6);
    }
    // forward along x only: the tangent of the loss is dx . t
    double t[N], ty[N] = {0}, want = 0, got = 0;
    static double tz[N * N], zeroA[N * N];
    for (int j = 0; j < n; j++) {
        t[j] = cos(0.3 * j);
        want += dxs[j] * t[j];
    }
    __enzyme_fwddiff((void *)layer_par, enzyme_dup, A, zeroA, enzyme_dup, x, t, enzyme_dup, y, ty, enzyme_dup, z, tz,
                     enzyme_const, n);
    for (int k = 0; k < n * n; k++) got += tz[k] * weight(k);
    check("forward vs gradient", 0, got, want, 1e-12);
    printf("%d failures\n", failures);
    return failures != 0;
}
