/* Primal parity (issue 29 item 0): a reaction-diffusion step loop (Gray-Scott in 1-D,
   periodic), the kind of time stepping whose primal is timed inside a zymase build. The
   step is its own function called from the time loop, buffers swapped each step;
   objective = sum of u and v after `steps` steps, differentiated with respect to the
   initial state.
   Build: zymase cc -O2 -I src/zymase/bench/workloads reaction_diffusion.c -lm
   Usage: reaction_diffusion [n] [steps] (BENCH_MODE=primal times the primal only) */
#include "bench_common.h"

#include "reaction_diffusion.h"

struct ctx {
    int n, steps;
    double *u0, *v0, *du0, *dv0, *u, *v, *du, *dv, *a, *b, *da, *db;
    double sink;
};

static void load(struct ctx *c) {
    memcpy(c->u, c->u0, sizeof(double) * (size_t)c->n);
    memcpy(c->v, c->v0, sizeof(double) * (size_t)c->n);
}

static void run_primal(void *p) {
    struct ctx *c = p;
    load(c);
    c->sink += simulate(c->u, c->v, c->a, c->b, c->n, c->steps);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    load(c);
    size_t bytes = sizeof(double) * (size_t)c->n;
    memset(c->du, 0, bytes);
    memset(c->dv, 0, bytes);
    memset(c->da, 0, bytes);
    memset(c->db, 0, bytes);
    __enzyme_autodiff((void *)simulate, enzyme_dup, c->u, c->du, enzyme_dup, c->v, c->dv, enzyme_dup, c->a,
                      c->da, enzyme_dup, c->b, c->db, enzyme_const, c->n, enzyme_const, c->steps);
    memcpy(c->du0, c->du, bytes); /* the gradient with respect to the initial state */
    memcpy(c->dv0, c->dv, bytes);
}

static double eval(void *p) {
    struct ctx *c = p;
    load(c);
    return simulate(c->u, c->v, c->a, c->b, c->n, c->steps);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4096;
    int steps = argc > 2 ? atoi(argv[2]) : 50;
    struct ctx c = {.n = n, .steps = steps};
    double **arrays[] = {&c.u0, &c.v0, &c.du0, &c.dv0, &c.u, &c.v, &c.du, &c.dv, &c.a, &c.b, &c.da, &c.db};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) *arrays[k] = bench_alloc((size_t)n, sizeof(double));
    bench_seed(3);
    for (int i = 0; i < n; i++) {
        c.u0[i] = 1.0 - 0.5 * bench_uniform();
        c.v0[i] = 0.25 * bench_uniform();
    }
    struct bench_workload w = {.name = "reaction_diffusion", .ctx = &c, .primal = run_primal,
                               .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "n=%d steps=%d", n, steps);
    bench_add(&w, "u0", 'd', c.u0, n, c.du0, 6);
    bench_add(&w, "v0", 'd', c.v0, n, c.dv0, 6);
    return bench_run(&w);
}
