// Vector reverse mode through a loop checkpointed under a tape limit (issue 25 item 2,
// session 28): 4 rows of the Jacobian of a time loop's outputs by one __enzyme_autodiff at
// enzyme_width 4 against four calls at width 1, and against the primal. Built with a tape
// limit, so each reverse sweep recomputes iterations from snapshots (revolve): width 4
// runs one schedule (one forward sweep, one set of snapshots and recomputations) for the
// 4 lanes, the four width-1 calls four. One process, the runs alternating, medians of
// `reps` rounds (thread CPU time: the machine is shared), each round timing `inner` calls.
// Checks that the lanes of width 4 equal the width-1 results.
//   zymase cc -O2 --tape-limit=64K bench/checkpoint_width.c -o /tmp/checkpoint_width &&
//   /tmp/checkpoint_width 20000 11 2
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "width_timing.h"

extern int enzyme_const, enzyme_dup, enzyme_width;
extern double __enzyme_autodiff(void *, ...);
typedef struct { double d[4]; } vec4;
extern vec4 __enzyme_autodiff4(void *, ...);

#define W 4
#define NCELL 64
#define NOUT 4

// explicit Euler for u_t = D u_xx - 0.05 u^3 over swapped buffers, then NOUT outputs
void evolve(double D, const double *u0, double *out, int nsteps) {
    double *u = malloc(sizeof(double) * NCELL);
    double *v = malloc(sizeof(double) * NCELL);
    memcpy(u, u0, sizeof(double) * NCELL);
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < NCELL; i++) {
            double left = i > 0 ? u[i - 1] : u[i];
            double right = i < NCELL - 1 ? u[i + 1] : u[i];
            v[i] = u[i] + 1e-2 * (D * (left - 2.0 * u[i] + right) - 0.05 * u[i] * u[i] * u[i]);
        }
        double *t = u;
        u = v;
        v = t;
    }
    double acc[NOUT] = {0.0, 0.0, 0.0, 0.0};  // (a local array: the loop is checkpointed too)
    for (int i = 0; i < NCELL; i++)
        for (int j = 0; j < NOUT; j++) acc[j] += u[i] * cos(0.1 * (j + 1) * i);
    out[0] = acc[0], out[1] = acc[1], out[2] = acc[2], out[3] = acc[3];
    free(u);
    free(v);
}

static double u0[NCELL], out[NOUT], du[W][NCELL], dout[W][NOUT], sink;
static int nsteps;

static void seeds(void) {
    memset(du, 0, sizeof du);
    for (int k = 0; k < W; k++)
        for (int j = 0; j < NOUT; j++) dout[k][j] = (j == k);
}

static void run_primal(void) {
    evolve(0.8, u0, out, nsteps);
    sink += out[0];
}

static vec4 run_width(void) {
    seeds();
    return __enzyme_autodiff4((void *)evolve, enzyme_width, W, 0.8, enzyme_dup, u0, du[0], du[1], du[2], du[3],
                              enzyme_dup, out, dout[0], dout[1], dout[2], dout[3], enzyme_const, nsteps);
}

static vec4 run_scalar(void) {
    vec4 r;
    seeds();
    for (int k = 0; k < W; k++)
        r.d[k] = __enzyme_autodiff((void *)evolve, 0.8, enzyme_dup, u0, du[k], enzyme_dup, out, dout[k],
                                   enzyme_const, nsteps);
    return r;
}

static void time_width(void) { (void)run_width(); }
static void time_scalar(void) { (void)run_scalar(); }

int main(int argc, char **argv) {
    nsteps = argc > 1 ? atoi(argv[1]) : 20000;
    int reps = argc > 2 ? atoi(argv[2]) : 11, inner = argc > 3 ? atoi(argv[3]) : 2;
    for (int i = 0; i < NCELL; i++) u0[i] = 0.5 + 0.4 * sin(0.7 * i);
    double check[W][NCELL];
    vec4 a = run_scalar();
    memcpy(check, du, sizeof du);
    vec4 b = run_width();
    double err = 0, scale = 0;  // relative to the largest derivative of the lanes
    for (int k = 0; k < W; k++) {
        scale = fmax(scale, fabs(a.d[k]));
        for (int i = 0; i < NCELL; i++) scale = fmax(scale, fabs(check[k][i]));
    }
    for (int k = 0; k < W; k++) {
        err = fmax(err, fabs(a.d[k] - b.d[k]) / scale);
        for (int i = 0; i < NCELL; i++) err = fmax(err, fabs(check[k][i] - du[k][i]) / scale);
    }
    printf("nsteps %d, width %d: lanes vs width 1, max relative difference %.2g (d/dD %.3g %.3g %.3g %.3g, "
           "d/du0[0] %.3g)\n", nsteps, W, err, a.d[0], a.d[1], a.d[2], a.d[3], check[0][0]);
    if (err > 1e-12) return 1;
    void (*const runs[3])(void) = {run_primal, time_width, time_scalar};
    double median[3];
    time_alternating(runs, reps, inner, median);
    double p = median[0], w = median[1], s = median[2];
    printf("primal %.2f ms; width %d %.2f ms (%.2fx primal); width 1 x %d %.2f ms (%.2fx primal); "
           "width %d / width 1 x %d = %.2f\n", 1e3 * p, W, 1e3 * w, w / p, W, 1e3 * s, s / p, W, W, w / s);
    return sink == 12345.0;
}
