/* Radix-2 Stockham FFT of n complex values (separate real and imaginary arrays, n a power of
   two): log2(n) passes, each reading one buffer and writing the other in memory order, so no
   bit-reversal permutation is needed and every pass streams through its arrays. The twiddles
   are computed once per size, outside the timed and differentiated code, like the plan FFTW
   and pocketfft (JAX's FFT) keep: the pass with half-length l reads exp(-2 pi i j / 2l), j < l,
   from entries l-1 .. 2l-2 of the tables. The two buffers the passes alternate between are
   the caller's workspace (four arrays of n), as FFTW's plans and JAX's compiled functions keep
   theirs, so no call allocates (allocating 2 MB per call costs page faults whenever glibc
   returns the freed memory to the system). Objective = sum_k w_k |X_k|^2; gradient w.r.t.
   the real and imaginary input arrays (dup), with a shadow workspace (dup: the passes write
   the workspace); the weights and twiddles are const.
   Usage: fft [n]   (default 1024) */
#include "bench_common.h"

/* One pass: x holds 2l blocks of m values; block j and block j + l combine into output blocks
   2j (their sum) and 2j + 1 (their difference times the twiddle). */
static void stockham_pass(const double *restrict xr, const double *restrict xi, double *restrict yr,
                          double *restrict yi, const double *restrict wr, const double *restrict wi,
                          int l, int m) {
    for (int j = 0; j < l; j++) {
        double cr = wr[j], ci = wi[j];
        const double *ar = xr + j * m, *ai = xi + j * m;
        const double *br = ar + l * m, *bi = ai + l * m;
        double *sr = yr + 2 * j * m, *si = yi + 2 * j * m;
        double *dr = sr + m, *di = si + m;
        for (int k = 0; k < m; k++) {
            double tr = ar[k] - br[k], ti = ai[k] - bi[k];
            sr[k] = ar[k] + br[k];
            si[k] = ai[k] + bi[k];
            dr[k] = tr * cr - ti * ci;
            di[k] = tr * ci + ti * cr;
        }
    }
}

static double weighted_power(const double *restrict w, const double *restrict re,
                             const double *restrict im, int n) {
    double s = 0.0;
    for (int k = 0; k < n; k++)
        s += w[k] * (re[k] * re[k] + im[k] * im[k]);
    return s;
}

double fft_objective(const double *restrict re_in, const double *restrict im_in,
                     const double *restrict w, const double *restrict tw_re,
                     const double *restrict tw_im, double *restrict are, double *restrict aim,
                     double *restrict bre, double *restrict bim, int n) {
    /* Passes alternate between the buffers (a, b); the first reads the input itself. */
    int pass = 0;
    for (int l = n / 2, m = 1; l >= 1; l /= 2, m *= 2, pass++) {
        const double *wr = tw_re + l - 1, *wi = tw_im + l - 1;
        if (pass == 0)
            stockham_pass(re_in, im_in, are, aim, wr, wi, l, m);
        else if (pass % 2)
            stockham_pass(are, aim, bre, bim, wr, wi, l, m);
        else
            stockham_pass(bre, bim, are, aim, wr, wi, l, m);
    }
    double s = pass % 2 ? weighted_power(w, are, aim, n) : weighted_power(w, bre, bim, n);
    return s;
}

struct ctx {
    int n;
    double *re, *im, *dre, *dim, *w, *tw_re, *tw_im, *work[4], *dwork[4];
    double sink;
};

static void run_primal(void *p) {
    struct ctx *c = p;
    c->sink += fft_objective(c->re, c->im, c->w, c->tw_re, c->tw_im, c->work[0], c->work[1], c->work[2], c->work[3], c->n);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    memset(c->dre, 0, sizeof(double) * (size_t)c->n);
    memset(c->dim, 0, sizeof(double) * (size_t)c->n);
    __enzyme_autodiff((void *)fft_objective, enzyme_dup, c->re, c->dre, enzyme_dup, c->im, c->dim,
                      enzyme_const, c->w, enzyme_const, c->tw_re, enzyme_const, c->tw_im,
                      enzyme_dup, c->work[0], c->dwork[0], enzyme_dup, c->work[1], c->dwork[1],
                      enzyme_dup, c->work[2], c->dwork[2], enzyme_dup, c->work[3], c->dwork[3],
                      enzyme_const, c->n);
}

static double eval(void *p) {
    struct ctx *c = p;
    return fft_objective(c->re, c->im, c->w, c->tw_re, c->tw_im, c->work[0], c->work[1], c->work[2], c->work[3], c->n);
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
    /* the shadow workspace is zeroed once: a gradient call leaves it zero (the reverse of the
       store that wrote an element consumes that element's adjoint, and every element read was
       written first) */
    for (int i = 0; i < 4; i++) {
        c.work[i] = bench_alloc((size_t)n, sizeof(double));
        c.dwork[i] = bench_alloc((size_t)n, sizeof(double));
    }
    c.tw_re = bench_alloc((size_t)n - 1, sizeof(double));
    c.tw_im = bench_alloc((size_t)n - 1, sizeof(double));
    for (int l = 1; l < n; l *= 2)
        for (int j = 0; j < l; j++) {
            c.tw_re[l - 1 + j] = cos(-BENCH_PI * j / l);
            c.tw_im[l - 1 + j] = sin(-BENCH_PI * j / l);
        }
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
