/* Iterative radix-2 decimation-in-time FFT of n complex values (separate real and imaginary
   arrays, n a power of two): bit-reversal permutation by swaps, then log2(n) butterfly passes
   with twiddles exp(-2 pi i k / len). Objective = sum_k w_k |X_k|^2; gradient w.r.t. the real
   and imaginary input arrays (both dup).
   Usage: fft [n]   (default 1024) */
#include "bench_common.h"

static void fft_inplace(double *restrict re, double *restrict im, int n) {
    for (int i = 1, j = 0; i < n; i++) {
        int bit = n >> 1;
        for (; j & bit; bit >>= 1)
            j ^= bit;
        j ^= bit;
        if (i < j) {
            double t = re[i]; re[i] = re[j]; re[j] = t;
            t = im[i]; im[i] = im[j]; im[j] = t;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        int half = len >> 1;
        double ang = -2.0 * BENCH_PI / len;
        for (int k = 0; k < half; k++) {
            double wr = cos(ang * k), wi = sin(ang * k);
            for (int s = 0; s < n; s += len) {
                int a = s + k, b = s + k + half;
                double tr = re[b] * wr - im[b] * wi;
                double ti = re[b] * wi + im[b] * wr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
    }
}

double fft_objective(const double *restrict re_in, const double *restrict im_in,
                     const double *restrict w, int n) {
    double *re = malloc(sizeof(double) * (size_t)n);
    double *im = malloc(sizeof(double) * (size_t)n);
    memcpy(re, re_in, sizeof(double) * (size_t)n);
    memcpy(im, im_in, sizeof(double) * (size_t)n);
    fft_inplace(re, im, n);
    double s = 0.0;
    for (int k = 0; k < n; k++)
        s += w[k] * (re[k] * re[k] + im[k] * im[k]);
    free(re);
    free(im);
    return s;
}

struct ctx {
    int n;
    double *re, *im, *dre, *dim, *w;
    double sink;
};

static void run_primal(void *p) {
    struct ctx *c = p;
    c->sink += fft_objective(c->re, c->im, c->w, c->n);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    memset(c->dre, 0, sizeof(double) * (size_t)c->n);
    memset(c->dim, 0, sizeof(double) * (size_t)c->n);
    __enzyme_autodiff((void *)fft_objective, enzyme_dup, c->re, c->dre, enzyme_dup, c->im, c->dim,
                      enzyme_const, c->w, enzyme_const, c->n);
}

static double eval(void *p) {
    struct ctx *c = p;
    return fft_objective(c->re, c->im, c->w, c->n);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n < 2 || (n & (n - 1))) {
        fprintf(stderr, "fft: n must be a power of two\n");
        return 2;
    }
    struct ctx c = {.n = n};
    c.re = bench_alloc((size_t)n, sizeof(double));
    c.im = bench_alloc((size_t)n, sizeof(double));
    c.dre = bench_alloc((size_t)n, sizeof(double));
    c.dim = bench_alloc((size_t)n, sizeof(double));
    c.w = bench_alloc((size_t)n, sizeof(double));
    bench_seed(5);
    for (int i = 0; i < n; i++) {
        c.re[i] = 2.0 * bench_uniform() - 1.0;
        c.im[i] = 2.0 * bench_uniform() - 1.0;
        c.w[i] = bench_uniform();
    }
    struct bench_workload w = {.name = "fft", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "n=%d", n);
    bench_add(&w, "re", 'd', c.re, n, c.dre, 5);
    bench_add(&w, "im", 'd', c.im, n, c.dim, 5);
    bench_add(&w, "w", 'd', c.w, n, NULL, 0);
    return bench_run(&w);
}
