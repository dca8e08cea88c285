/* Fisher-KPP reaction-diffusion u_t = D u_xx + r u (1 - u) on [0, 1] with zero-flux boundaries,
   discretized with ncell cells and integrated by explicit Euler for nsteps steps of dt = 1e-4;
   objective = sum_i w_i u_i(T). Gradient w.r.t. the diffusion and reaction coefficients (active
   double arguments, returned by __enzyme_autodiff as a struct) and the initial state (dup).
   Usage: ode [ncell nsteps]   (default 100 10000) */
#include "bench_common.h"

typedef struct { double dD, dr; } grad2;
#ifdef BENCH_PRIMAL_ONLY
static grad2 __enzyme_autodiff_kpp(void *f, ...) {
    (void)f;
    abort();
}
#else
/* the active double arguments' derivatives come back as a struct: declared under its own name */
extern grad2 __enzyme_autodiff_kpp(void *, ...);
#endif

#define DT 1e-4
static const double time_step = DT; /* dumped for the JAX/PyTorch versions */

double kpp_objective(double D, double r, const double *restrict u0, const double *restrict w,
                     int ncell, int nsteps) {
    double *u = malloc(sizeof(double) * (size_t)ncell);
    double *v = malloc(sizeof(double) * (size_t)ncell);
    memcpy(u, u0, sizeof(double) * (size_t)ncell);
    double inv_dx2 = (double)ncell * (double)ncell;
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < ncell; i++) {
            double left = i > 0 ? u[i - 1] : u[i];
            double right = i < ncell - 1 ? u[i + 1] : u[i];
            double lap = (left - 2.0 * u[i] + right) * inv_dx2;
            v[i] = u[i] + DT * (D * lap + r * u[i] * (1.0 - u[i]));
        }
        double *t = u;
        u = v;
        v = t;
    }
    double s = 0.0;
    for (int i = 0; i < ncell; i++)
        s += w[i] * u[i];
    free(u);
    free(v);
    return s;
}

struct ctx {
    int ncell, nsteps;
    double p[2], g[2]; /* D, r and their derivatives */
    double *u0, *du0, *w;
    double sink;
};

static void run_primal(void *q) {
    struct ctx *c = q;
    c->sink += kpp_objective(c->p[0], c->p[1], c->u0, c->w, c->ncell, c->nsteps);
}

static void run_grad(void *q) {
    struct ctx *c = q;
    memset(c->du0, 0, sizeof(double) * (size_t)c->ncell);
    grad2 g = __enzyme_autodiff_kpp((void *)kpp_objective, enzyme_out, c->p[0], enzyme_out, c->p[1],
                                    enzyme_dup, c->u0, c->du0, enzyme_const, c->w,
                                    enzyme_const, c->ncell, enzyme_const, c->nsteps);
    c->g[0] = g.dD;
    c->g[1] = g.dr;
}

static double eval(void *q) {
    struct ctx *c = q;
    return kpp_objective(c->p[0], c->p[1], c->u0, c->w, c->ncell, c->nsteps);
}

int main(int argc, char **argv) {
    struct ctx c = {.ncell = 100, .nsteps = 10000, .p = {0.05, 2.0}};
    if (argc >= 3) {
        c.ncell = atoi(argv[1]);
        c.nsteps = atoi(argv[2]);
    }
    int n = c.ncell;
    c.u0 = bench_alloc((size_t)n, sizeof(double));
    c.du0 = bench_alloc((size_t)n, sizeof(double));
    c.w = bench_alloc((size_t)n, sizeof(double));
    bench_seed(11);
    for (int i = 0; i < n; i++) {
        double x = (i + 0.5) / n;
        c.u0[i] = 0.8 * exp(-50.0 * (x - 0.3) * (x - 0.3)) + 0.05 * bench_uniform();
        c.w[i] = bench_uniform();
    }
    struct bench_workload w = {.name = "ode", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "cells=%d steps=%d", n, c.nsteps);
    bench_add(&w, "params", 'd', c.p, 2, c.g, 2);
    bench_add(&w, "u0", 'd', c.u0, n, c.du0, 5);
    bench_add(&w, "w", 'd', c.w, n, NULL, 0);
    bench_add(&w, "nsteps", 'i', &c.nsteps, 1, NULL, 0);
    bench_add(&w, "dt", 'd', (void *)&time_step, 1, NULL, 0);
    return bench_run(&w);
}
