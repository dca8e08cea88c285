/* Vector normalization out[i] = in[i] / mag(in), objective = sum_i w[i] * out[i].
   Enzyme's headline example: mag(in) is loop-invariant, and with restrict pointers and
   -fno-math-errno (so that sqrt does not write errno) LICM hoists it out of the loop before
   differentiation, making the gradient O(n) instead of O(n^2).
   Build: zymase cc -O2 -fno-math-errno bench/workloads/normalize.c -o normalize
   Usage: normalize [n]   (default 10000) */
#include "bench_common.h"

extern double __enzyme_autodiff(void *, ...);

/* noinline: if mag were inlined, its loop would become an inner loop of normalize, and LICM
   hoists instructions and calls, not loops; as a call to a function known to only read its
   argument memory (and, with -fno-math-errno, not write errno) it is hoisted out of the loop. */
__attribute__((noinline)) static double mag(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

static void normalize(double *restrict out, const double *restrict in, int n) {
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
}

double objective(const double *restrict in, double *restrict out, const double *restrict w, int n) {
    normalize(out, in, n);
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += w[i] * out[i];
    return s;
}

struct ctx {
    int n;
    double *in, *din, *out, *dout, *w;
    double sink;
};

static void run_primal(void *p) {
    struct ctx *c = p;
    c->sink += objective(c->in, c->out, c->w, c->n);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    memset(c->din, 0, sizeof(double) * (size_t)c->n);
    memset(c->dout, 0, sizeof(double) * (size_t)c->n);
    __enzyme_autodiff((void *)objective, enzyme_dup, c->in, c->din, enzyme_dup, c->out, c->dout,
                      enzyme_const, c->w, c->n);
}

static double eval(void *p) {
    struct ctx *c = p;
    return objective(c->in, c->out, c->w, c->n);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    struct ctx c = {.n = n};
    c.in = malloc(sizeof(double) * (size_t)n);
    c.din = malloc(sizeof(double) * (size_t)n);
    c.out = malloc(sizeof(double) * (size_t)n);
    c.dout = malloc(sizeof(double) * (size_t)n);
    c.w = malloc(sizeof(double) * (size_t)n);
    bench_seed(1);
    for (int i = 0; i < n; i++) {
        c.in[i] = bench_uniform() * 2.0 - 1.0;
        c.w[i] = bench_uniform();
    }
    double tp = bench_time(run_primal, &c, bench_min_s(), bench_repeats());
    double tg = bench_time(run_grad, &c, bench_min_s(), bench_repeats());
    run_grad(&c);
    double err = bench_check("din", eval, &c, c.in, c.din, n, 8);
    char size[64];
    snprintf(size, sizeof size, "n=%d", n);
    int rc = bench_report("normalize", size, tp, tg, err);
    free(c.in); free(c.din); free(c.out); free(c.dout); free(c.w);
    return rc;
}
