// Batched evaluation (issue 25 item 2): __enzyme_batch at width 4 and 8 against the
// same number of scalar calls. One process, the runs alternating, medians of `reps`
// rounds, each timing `inner` evaluations of all lanes:
//   scalar x N   N calls of f, one per input
//   batch N      one __enzyme_batch(f, enzyme_width, N, ...) call
// Two functions: `decay`, an explicit Euler integration of x' = -x + a sin(x) over
// `steps` steps (a loop on a shared bound, transcendental lane arithmetic), and
// `horner`, a degree-`deg` polynomial with a shared coefficient table evaluated on
// every element of a lane's array (a loop over memory). Checks that the lanes equal
// the scalar calls.
//   zymase cc -O2 bench/batch_width.c -o /tmp/batch_width && /tmp/batch_width 200 21 2000
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int enzyme_width, enzyme_scalar;
typedef struct { double d[4]; } vec4;
typedef struct { double d[8]; } vec8;
extern vec4 __enzyme_batch4(void *, ...);
extern vec8 __enzyme_batch8(void *, ...);
extern void __enzyme_batchv(void *, ...);

__attribute__((noinline)) static double decay(double x, double a, int steps) {
    double h = 1.0 / steps;
    for (int i = 0; i < steps; i++) x += h * (-x + a * sin(x));
    return x;
}

__attribute__((noinline)) static void horner(const double *c, int deg, const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) {
        double p = c[deg];
        for (int j = deg - 1; j >= 0; j--) p = p * x[i] + c[j];
        out[i] = p;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

#define N_ARR 256
static volatile double sink;

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 200;
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    int inner = argc > 3 ? atoi(argv[3]) : 2000;
    double x[8], a = 0.7;
    for (int k = 0; k < 8; k++) x[k] = 0.1 + 0.3 * k;
    double t_s4[64], t_b4[64], t_s8[64], t_b8[64];
    int bad = 0;
    for (int r = 0; r < reps; r++) {
        double acc = 0, t0 = now();
        for (int it = 0; it < inner; it++)
            for (int k = 0; k < 4; k++) acc += decay(x[k] + 1e-9 * it, a, steps);
        t_s4[r] = now() - t0;
        t0 = now();
        for (int it = 0; it < inner; it++) {
            double e = 1e-9 * it;
            vec4 v = __enzyme_batch4((void *)decay, enzyme_width, 4, x[0] + e, x[1] + e, x[2] + e, x[3] + e,
                                     enzyme_scalar, a, enzyme_scalar, steps);
            for (int k = 0; k < 4; k++) acc -= v.d[k];
        }
        t_b4[r] = now() - t0;
        t0 = now();
        for (int it = 0; it < inner; it++)
            for (int k = 0; k < 8; k++) acc += decay(x[k] + 1e-9 * it, a, steps);
        t_s8[r] = now() - t0;
        t0 = now();
        for (int it = 0; it < inner; it++) {
            double e = 1e-9 * it;
            vec8 v = __enzyme_batch8((void *)decay, enzyme_width, 8, x[0] + e, x[1] + e, x[2] + e, x[3] + e,
                                     x[4] + e, x[5] + e, x[6] + e, x[7] + e, enzyme_scalar, a, enzyme_scalar, steps);
            for (int k = 0; k < 8; k++) acc -= v.d[k];
        }
        t_b8[r] = now() - t0;
        if (fabs(acc) > 1e-6 * inner) bad = 1;
        sink = acc;
    }
    printf("decay (%d steps): scalar x4 %.3f ms, batch 4 %.3f ms (ratio %.2f); scalar x8 %.3f ms, batch 8 %.3f ms "
           "(ratio %.2f)\n", steps, 1e3 * median(t_s4, reps), 1e3 * median(t_b4, reps),
           median(t_b4, reps) / median(t_s4, reps), 1e3 * median(t_s8, reps), 1e3 * median(t_b8, reps),
           median(t_b8, reps) / median(t_s8, reps));

    static double xs[4][N_ARR], outs[4][N_ARR], outb[4][N_ARR];
    double c[9] = {1.0, -0.5, 0.25, 0.125, -0.3, 0.2, 0.01, -0.02, 0.003};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < N_ARR; i++) xs[k][i] = -1.0 + 2.0 * i / N_ARR + 0.01 * k;
    double t_sh[64], t_bh[64];
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int it = 0; it < inner; it++)
            for (int k = 0; k < 4; k++) horner(c, 8, xs[k], outs[k], N_ARR);
        t_sh[r] = now() - t0;
        t0 = now();
        for (int it = 0; it < inner; it++)
            __enzyme_batchv((void *)horner, enzyme_width, 4, enzyme_scalar, c, enzyme_scalar, 8, xs[0], xs[1], xs[2],
                            xs[3], outb[0], outb[1], outb[2], outb[3], enzyme_scalar, N_ARR);
        t_bh[r] = now() - t0;
    }
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < N_ARR; i++)
            if (outs[k][i] != outb[k][i]) bad = 1;
    printf("horner (degree 8, %d points): scalar x4 %.3f ms, batch 4 %.3f ms (ratio %.2f)\n", N_ARR,
           1e3 * median(t_sh, reps), 1e3 * median(t_bh, reps), median(t_bh, reps) / median(t_sh, reps));
    if (bad) printf("MISMATCH between the batched lanes and the scalar calls\n");
    return bad;
}
