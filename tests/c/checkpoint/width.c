/* Vector mode through loops checkpointed under a tape limit (issue 25 item 2); built by
   tests/test_c_checkpoint.py with `--tape-limit=4K` (and without a limit). Reverse mode
   at width N gives N rows of the Jacobian of the outputs in one sweep: one schedule, one
   set of snapshots and recomputations, each iteration reversed by one call of the step's
   width-N derivative. Each lane is checked against __enzyme_autodiff at width 1 with that
   lane's seeds (the same schedule, so to rounding) and against central finite
   differences, at widths 1, 2 and 3 (NCELL = 8: 3 does not divide it).
   Usage: width [nsteps]   (the trip count is known only at run time) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int enzyme_const, enzyme_dup, enzyme_width;
extern double __enzyme_autodiff(void *, ...);
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
extern vec2 __enzyme_autodiff2(void *, ...);
extern vec3 __enzyme_autodiff3(void *, ...);

#define NCELL 8
#define NOUT 3

/* explicit Euler for u_t = D u_xx + u (1 - u) over swapped buffers (an inner loop and
   carried pointers) next to a carried register (the running energy), then NOUT outputs
   of the final state written to out */
void evolve(double D, const double *u0, double *out, int nsteps) {
    double *u = malloc(sizeof(double) * NCELL);
    double *v = malloc(sizeof(double) * NCELL);
    memcpy(u, u0, sizeof(double) * NCELL);
    double energy = 0.0;
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < NCELL; i++) {
            double left = i > 0 ? u[i - 1] : u[i];
            double right = i < NCELL - 1 ? u[i + 1] : u[i];
            v[i] = u[i] + 1e-2 * (D * (left - 2.0 * u[i] + right) + u[i] * (1.0 - u[i]));
        }
        energy += 1e-2 * v[0] * v[NCELL - 1];
        double *t = u;
        u = v;
        v = t;
    }
    double s = 0.0, p = 1.0, c = 0.0;
    for (int i = 0; i < NCELL; i++) {
        s += u[i] * u[i];
        p *= 1.0 + 0.1 * u[i];
        c += cos(u[i]) * (i + 1);
    }
    out[0] = s + energy;
    out[1] = p;
    out[2] = c * energy;
    free(u);
    free(v);
}

static int failures;
static void check(const char *what, int lane, int i, double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * (1.0 + fabs(want)))) {
        printf("FAIL %s lane %d [%d]: %.17g, wanted %.17g\n", what, lane, i, got, want);
        failures++;
    }
}

/* lane k's seed of the outputs: a unit row for k < NOUT, a mix after */
static double seed_of(int k, int j) { return k < NOUT ? (j == k) : 0.5 * (j + 1) - 0.3 * k; }

static double weighted(double D, const double *u0, int k, int nsteps) {
    double out[NOUT], r = 0.0;
    evolve(D, u0, out, nsteps);
    for (int j = 0; j < NOUT; j++) r += seed_of(k, j) * out[j];
    return r;
}

/* lane k (dD and du0 of the width-W call) against width 1 and finite differences */
static void check_lane(const char *what, int k, double dD, const double *du0, double D, double *u0, int nsteps) {
    double u[NCELL], du[NCELL] = {0}, out[NOUT], dout[NOUT];
    memcpy(u, u0, sizeof u);
    for (int j = 0; j < NOUT; j++) dout[j] = seed_of(k, j);
    double dD1 = __enzyme_autodiff((void *)evolve, D, enzyme_dup, u, du, enzyme_dup, out, dout, enzyme_const,
                                   nsteps);
    check(what, k, -1, dD, dD1, 1e-12);
    for (int i = 0; i < NCELL; i++) check(what, k, i, du0[i], du[i], 1e-12);
    const double h = 1e-6;
    check(what, k, -1, dD, (weighted(D + h, u0, k, nsteps) - weighted(D - h, u0, k, nsteps)) / (2 * h), 1e-6);
    for (int i = 0; i < NCELL; i += 3) {
        double keep = u0[i];
        u0[i] = keep + h;
        double fp = weighted(D, u0, k, nsteps);
        u0[i] = keep - h;
        double fm = weighted(D, u0, k, nsteps);
        u0[i] = keep;
        check(what, k, i, du0[i], (fp - fm) / (2 * h), 1e-6);
    }
}

#define COMMA ,
#define LANES(W, VEC, DU, DOUT)                                                                               \
    static void width##W(double D, double *u0, int nsteps) {                                                  \
        double u[NCELL], out[NOUT], du[W][NCELL] = {{0}}, dout[W][NOUT];                                      \
        memcpy(u, u0, sizeof u);                                                                              \
        for (int k = 0; k < W; k++)                                                                           \
            for (int j = 0; j < NOUT; j++) dout[k][j] = seed_of(k, j);                                        \
        VEC dD = __enzyme_autodiff##W((void *)evolve, enzyme_width, W, D, enzyme_dup, u, DU, enzyme_dup, out, \
                                      DOUT, enzyme_const, nsteps);                                            \
        for (int k = 0; k < W; k++) check_lane("width " #W, k, dD.d[k], du[k], D, u0, nsteps);              \
    }
LANES(2, vec2, du[0] COMMA du[1], dout[0] COMMA dout[1])
LANES(3, vec3, du[0] COMMA du[1] COMMA du[2], dout[0] COMMA dout[1] COMMA dout[2])

static void width1(double D, double *u0, int nsteps) {
    double u[NCELL], out[NOUT], du[NCELL] = {0}, dout[NOUT];
    memcpy(u, u0, sizeof u);
    for (int j = 0; j < NOUT; j++) dout[j] = seed_of(0, j);
    double dD = __enzyme_autodiff((void *)evolve, enzyme_width, 1, D, enzyme_dup, u, du, enzyme_dup, out, dout,
                                  enzyme_const, nsteps);
    check_lane("width 1", 0, dD, du, D, u0, nsteps);
}

int main(int argc, char **argv) {
    int nsteps = argc > 1 ? atoi(argv[1]) : 300;
    double u0[NCELL], D = 0.8;
    for (int i = 0; i < NCELL; i++) u0[i] = 0.5 + 0.4 * sin(0.7 * i);
    width1(D, u0, nsteps);
    width2(D, u0, nsteps);
    width3(D, u0, nsteps);
    printf("%d failures\n", failures);
    return failures != 0;
}
