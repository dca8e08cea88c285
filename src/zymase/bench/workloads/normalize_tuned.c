/* NORMALIZATION, TUNED VARIANT of normalize.c (Enzyme's example as written, the headline
   form): the same objective with its sums declared order-free and mag's sum interleaved
   four ways by pragmas; `zymase bench` shows it beside normalize.c, labelled as tuned.
   Vector normalization out[i] = in[i] / mag(in), objective = sum_i w[i] * out[i].
   Enzyme's headline example: mag(in) is loop-invariant, and with restrict pointers and
   -fno-math-errno (so that sqrt does not write errno) LICM hoists it out of the loop before
   differentiation, making the gradient O(n) instead of O(n^2).
   The two sums are declared order-free (#pragma clang fp reassociate), as a sum in JAX or
   NumPy is: in IEEE order each add waits for the previous one, so a 1e5-element sum runs at
   one element per add latency and no compiler may vectorize it. The gradient's own sums
   (adjoint accumulations) are order-free in zymase anyway.
   The gradient call passes `out` as enzyme_dupnoneed: it is scratch, and a caller who wants
   the gradient does not want the normalized vector back (jax.grad never forms it either).
   The derivative then neither divides nor stores it: nothing it computes reads `out` back.
   Build: zymase cc -O2 -fno-math-errno normalize_tuned.c -o normalize_tuned -lm
   Usage: normalize_tuned [n]   (default 10000; inputs generated deterministically) */
#include "bench_common.h"

/* noinline: if mag were inlined, its loop would become an inner loop of normalize, and LICM
   hoists instructions and calls, not loops; as a call to a function known to only read its
   argument memory (and, with -fno-math-errno, not write errno) it is hoisted out of the loop. */
__attribute__((noinline)) static double mag(const double *restrict x, int n) {
#pragma clang fp reassociate(on)
    double s = 0.0;
    /* four interleaved vector sums rather than LLVM's default two: the sum is bound by the
       add latency, not by memory (primal and gradient 8-9% faster at n = 1e3..1e5) */
#pragma clang loop interleave_count(4)
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

static void normalize(double *restrict out, const double *restrict in, int n) {
    for (int i = 0; i < n; i++)
        out[i] = in[i] / mag(in, n);
}

double objective(const double *restrict in, double *restrict out, const double *restrict w, int n) {
#pragma clang fp reassociate(on)
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
    __enzyme_autodiff((void *)objective, enzyme_dup, c->in, c->din, enzyme_dupnoneed, c->out, c->dout,
                      enzyme_const, c->w, c->n);
}

static double eval(void *p) {
    struct ctx *c = p;
    return objective(c->in, c->out, c->w, c->n);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10000;
    struct ctx c = {.n = n};
    c.in = bench_alloc((size_t)n, sizeof(double));
    c.din = bench_alloc((size_t)n, sizeof(double));
    c.out = bench_alloc((size_t)n, sizeof(double));
    c.dout = bench_alloc((size_t)n, sizeof(double));
    c.w = bench_alloc((size_t)n, sizeof(double));
    bench_seed(1);
    for (int i = 0; i < n; i++) {
        c.in[i] = bench_uniform() * 2.0 - 1.0;
        c.w[i] = bench_uniform();
    }
    struct bench_workload w = {.name = "normalize_tuned", .ctx = &c, .primal = run_primal, .grad = run_grad,
                               .eval = eval};
    snprintf(w.size, sizeof w.size, "n=%d", n);
    bench_add(&w, "in", 'd', c.in, n, c.din, 8);
    bench_add(&w, "w", 'd', c.w, n, NULL, 0);
    return bench_run(&w);
}
