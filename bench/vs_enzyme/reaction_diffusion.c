/* bench/parity/reaction_diffusion.c's step loop (Gray-Scott in 1-D, periodic; the step its
   own function called from the time loop, buffers swapped each step) in vs_harness.h's
   form: x holds the initial u then v (2 m values for m cells), 50 steps; objective
   sum_i u_i + 0.5 v_i after the steps, differentiated w.r.t. the initial state. */
#include "vs_harness.h"

#define RD_STEPS 50
/* -DRD_NO_RESTRICT drops rd_step's restrict qualifiers: Enzyme (as Enzyme-JAX 0.0.16 embeds
   it) differentiates the restrict version wrongly (every entry off; its buffers are swapped
   between calls, so what one call reads the next overwrites), the other one correctly */
#ifdef RD_NO_RESTRICT
#define RD_RESTRICT
#else
#define RD_RESTRICT VS_RESTRICT
#endif
#define RD_SIMULATE_LINKAGE static
#include "../parity/reaction_diffusion.h"

struct vs_state {
    int m;
    double sink;
    double *x, *u, *v, *a, *b, *du, *dv, *da, *db;
};

static void *vs_init(int n, const double *x) {
    struct vs_state *s = (struct vs_state *)vs_alloc(sizeof *s);
    s->m = n / 2;
    s->sink = 0.0;
    size_t bytes = sizeof(double) * (size_t)s->m;
    double **arrays[] = {&s->u, &s->v, &s->a, &s->b, &s->du, &s->dv, &s->da, &s->db};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) *arrays[k] = (double *)vs_alloc(bytes);
    s->x = (double *)vs_alloc(2 * bytes);
    memcpy(s->x, x, 2 * bytes);
    return s;
}

static void rd_load(struct vs_state *s) {
    memcpy(s->u, s->x, sizeof(double) * (size_t)s->m);
    memcpy(s->v, s->x + s->m, sizeof(double) * (size_t)s->m);
}

static double vs_objective(void *p) {
    struct vs_state *s = (struct vs_state *)p;
    rd_load(s);
    return simulate(s->u, s->v, s->a, s->b, s->m, RD_STEPS);
}

static void vs_primal(void *p) { ((struct vs_state *)p)->sink += vs_objective(p); }

/* as bench/parity/reaction_diffusion.c's run_grad: state reloaded, every shadow zeroed */
static void vs_grad(void *p, double *g) {
    struct vs_state *s = (struct vs_state *)p;
    rd_load(s);
    size_t bytes = sizeof(double) * (size_t)s->m;
    memset(s->du, 0, bytes);
    memset(s->dv, 0, bytes);
    memset(s->da, 0, bytes);
    memset(s->db, 0, bytes);
    __enzyme_autodiff((void *)simulate, enzyme_dup, s->u, s->du, enzyme_dup, s->v, s->dv, enzyme_dup, s->a,
                      s->da, enzyme_dup, s->b, s->db, enzyme_const, s->m, enzyme_const, RD_STEPS);
    memcpy(g, s->du, bytes);
    memcpy(g + s->m, s->dv, bytes);
}
