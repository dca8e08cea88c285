/* Primal parity (issue 29 item 0): Enzyme's normalization loop out[i] = x[i] / mag(x), mag
   noinline, restrict arguments, built with -fno-math-errno. Written as a user would: the
   gradient call passes `normalize` itself, so the primal `normalize` is both called
   directly and named by the marker call. clang hoists mag out of the loop (LICM) only
   when it can see that the stores to `out` do not change what mag reads.
   Build: zymase cc -O2 -fno-math-errno -I src/zymase/bench/workloads normalize_loop.c -lm
   Usage: normalize_loop [n] (BENCH_MODE=primal times the primal only) */
#include "bench_common.h"

__attribute__((noinline)) static double mag(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

void normalize(double *restrict out, const double *restrict x, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] / mag(x, n);
}

struct ctx {
    int n;
    double *x, *dx, *out, *dout;
};

static void run_primal(void *p) {
    struct ctx *c = p;
    normalize(c->out, c->x, c->n);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    memset(c->dx, 0, sizeof(double) * (size_t)c->n);
    for (int i = 0; i < c->n; i++) c->dout[i] = 1.0 + 0.001 * i;
    __enzyme_autodiff((void *)normalize, enzyme_dup, c->out, c->dout, enzyme_dup, c->x, c->dx,
                      enzyme_const, c->n);
}

/* the objective whose gradient run_grad computes: sum_i w_i out_i, w_i = 1 + 0.001 i */
static double eval(void *p) {
    struct ctx *c = p;
    normalize(c->out, c->x, c->n);
    double s = 0.0;
    for (int i = 0; i < c->n; i++) s += (1.0 + 0.001 * i) * c->out[i];
    return s;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4000;
    struct ctx c = {.n = n};
    c.x = bench_alloc((size_t)n, sizeof(double));
    c.dx = bench_alloc((size_t)n, sizeof(double));
    c.out = bench_alloc((size_t)n, sizeof(double));
    c.dout = bench_alloc((size_t)n, sizeof(double));
    bench_seed(7);
    for (int i = 0; i < n; i++) c.x[i] = 1.0 + bench_uniform();
    struct bench_workload w = {.name = "normalize_loop", .ctx = &c, .primal = run_primal,
                               .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "n=%d", n);
    bench_add(&w, "x", 'd', c.x, n, c.dx, 8);
    return bench_run(&w);
}
