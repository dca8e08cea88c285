/* The gradient of a chain of BLAS calls against its primal (issue 26, C performance): a
   3-layer dense network on a batch, Y = W3 tanh(W2 tanh(W1 X)), loss = |Y|^2 / 2, with
   n x n weights and an n x n batch; the gradient with respect to W1, W2 and W3. zymase
   differentiates each cblas_dgemm at the level of the call (two gemms per layer in the
   reverse sweep), so the gradient should cost about (3 + 5) / 3 primal gemm times plus
   the elementwise work: the target is at most 3x the primal.

     zymase cc -O2 bench/blas_chain.c -o /tmp/blas_chain -lopenblas
     OPENBLAS_NUM_THREADS=1 /tmp/blas_chain 256 20
     OPENBLAS_NUM_THREADS=1 /tmp/blas_chain 512 5

   Primal and gradient run alternately in one process; reported: the minimum of `reps` runs
   of each, the ratio of the minima, and the median of the per-pair ratios (steadier on a
   shared machine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <cblas.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static void tanh_all(double *H, long count) {
    for (long i = 0; i < count; i++)
        H[i] = tanh(H[i]);
}

static double net(const double *restrict W1, const double *restrict W2, const double *restrict W3,
                  const double *restrict X, int n) {
    long nn = (long)n * n;
    double *H1 = malloc(nn * sizeof(double)), *H2 = malloc(nn * sizeof(double)), *Y = malloc(nn * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, W1, n, X, n, 0.0, H1, n);
    tanh_all(H1, nn);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, W2, n, H1, n, 0.0, H2, n);
    tanh_all(H2, nn);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, W3, n, H2, n, 0.0, Y, n);
    double s = 0.0;
    for (long i = 0; i < nn; i++)
        s += 0.5 * Y[i] * Y[i];
    free(H1), free(H2), free(Y);
    return s;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256, reps = argc > 2 ? atoi(argv[2]) : 10;
    long nn = (long)n * n;
    double *W1 = malloc(nn * 8), *W2 = malloc(nn * 8), *W3 = malloc(nn * 8), *X = malloc(nn * 8);
    double *d1 = calloc(nn, 8), *d2 = calloc(nn, 8), *d3 = calloc(nn, 8);
    double scale = 1.0 / sqrt(n);
    for (long i = 0; i < nn; i++)
        W1[i] = scale * sin(0.37 * i), W2[i] = scale * cos(0.11 * i + 1), W3[i] = scale * sin(0.05 * i + 2),
        X[i] = cos(0.7 * i);
    double best_p = 1e30, best_g = 1e30, sink = 0, ratios[1000];
    if (reps > 1000) reps = 1000;
    for (int r = 0; r < reps; r++) {
        double t0 = seconds();
        sink += net(W1, W2, W3, X, n);
        double t1 = seconds();
        memset(d1, 0, nn * 8), memset(d2, 0, nn * 8), memset(d3, 0, nn * 8);
        double t2 = seconds();
        __enzyme_autodiff((void *)net, enzyme_dup, W1, d1, enzyme_dup, W2, d2, enzyme_dup, W3, d3, enzyme_const, X, n);
        double t3 = seconds();
        if (t1 - t0 < best_p) best_p = t1 - t0;
        if (t3 - t2 < best_g) best_g = t3 - t2;
        ratios[r] = (t3 - t2) / (t1 - t0);
    }
    for (int i = 1; i < reps; i++) /* insertion sort: the median pair ratio */
        for (int j = i; j > 0 && ratios[j - 1] > ratios[j]; j--) {
            double t = ratios[j];
            ratios[j] = ratios[j - 1], ratios[j - 1] = t;
        }
    /* one entry of each gradient against a central difference, as a sanity check */
    double h = 1e-6, worst = 0;
    double *Ws[3] = {W1, W2, W3}, *ds[3] = {d1, d2, d3};
    for (int l = 0; l < 3; l++) {
        long k = (nn / 3 + 17 * l) % nn;
        double keep = Ws[l][k];
        Ws[l][k] = keep + h;
        double up = net(W1, W2, W3, X, n);
        Ws[l][k] = keep - h;
        double down = net(W1, W2, W3, X, n);
        Ws[l][k] = keep;
        double want = (up - down) / (2 * h), err = fabs(ds[l][k] - want) / fmax(1.0, fabs(want));
        if (err > worst) worst = err;
    }
    printf("n=%d reps=%d primal %.4f s gradient %.4f s ratio of minima %.2f median pair ratio %.2f "
           "(max rel. error vs FD %.1e)%s\n", n, reps, best_p, best_g, best_g / best_p, ratios[reps / 2], worst,
           sink == sink ? "" : " nan");
    return worst > 1e-4;
}
