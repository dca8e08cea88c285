/* Enzyme's normalization example (issue 29's target): out[i] = x[i] / mag(x), mag noinline,
   restrict arguments, built with -fno-math-errno (cpp_call's front end never sets errno on
   math calls). The same loops as bench/parity/normalize_loop.c and bench/licm_normalize.c;
   objective sum_i w_i out_i with w_i = 1 + 0.001 i, differentiated w.r.t. x. */
#include "vs_harness.h"

__attribute__((noinline)) static double mag(const double *VS_RESTRICT x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return sqrt(s);
}

static void normalize(double *VS_RESTRICT out, const double *VS_RESTRICT x, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] / mag(x, n);
}

struct vs_state {
    int n;
    double *x, *out, *dout;
};

static void *vs_init(int n, const double *x) {
    struct vs_state *s = (struct vs_state *)vs_alloc(sizeof *s);
    s->n = n;
    s->x = (double *)vs_alloc(sizeof(double) * (size_t)n);
    s->out = (double *)vs_alloc(sizeof(double) * (size_t)n);
    s->dout = (double *)vs_alloc(sizeof(double) * (size_t)n);
    memcpy(s->x, x, sizeof(double) * (size_t)n);
    return s;
}

static void vs_primal(void *p) {
    struct vs_state *s = (struct vs_state *)p;
    normalize(s->out, s->x, s->n);
}

/* as bench/parity/normalize_loop.c's run_grad: the seed is rewritten each call (the
   gradient consumes it) and the shadow of x zeroed */
static void vs_grad(void *p, double *g) {
    struct vs_state *s = (struct vs_state *)p;
    memset(g, 0, sizeof(double) * (size_t)s->n);
    for (int i = 0; i < s->n; i++) s->dout[i] = 1.0 + 0.001 * i;
    __enzyme_autodiff((void *)normalize, enzyme_dup, s->out, s->dout, enzyme_dup, s->x, g,
                      enzyme_const, s->n);
}

static double vs_objective(void *p) {
    struct vs_state *s = (struct vs_state *)p;
    normalize(s->out, s->x, s->n);
    double f = 0.0;
    for (int i = 0; i < s->n; i++) f += (1.0 + 0.001 * i) * s->out[i];
    return f;
}
