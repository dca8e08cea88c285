// Split reverse mode in vector mode (issue 25 item 2): N cotangents of one function by
// one __enzyme_augmentfwd + __enzyme_reverse pair at enzyme_width N against N pairs at
// width 1, and against the primal. One process, the runs alternating, medians of `reps`
// rounds (thread CPU time: the machine is shared), each round timing `inner` calls:
//   primal        one call of f
//   width 4       one augmented pass and one reverse pass at width 4 (4 cotangents)
//   width 1 x 4   four augmented and four reverse passes at width 1 (the same 4)
// f (a transcendental map into an output array and a weighted sum of it) computes its
// primal once per pair: the width-4 pair runs it once, the four pairs four times. Checks
// that the lanes of width 4 equal the width-1 results.
//   zymase cc -O2 bench/split_width.c -o /tmp/split_width && /tmp/split_width 4000 21 20
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "width_timing.h"

extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_width;
typedef struct { void *tape; double value; } augmented;
extern augmented __enzyme_augmentfwd(void *, ...);
extern double __enzyme_reverse(void *, ...);
typedef struct { double d[4]; } vec4;
extern vec4 __enzyme_reverse4(void *, ...);

#define W 4

static double f(double a, const double *x, double *out, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) {
        out[i] = exp(-a * x[i] * x[i]) * sin(x[i] + a);
        s += out[i] * (1.0 + 1e-3 * (double)i);
    }
    return s;
}

static double *x, *out, *dx, *dout;  // dx, dout: W lanes of n, lane k at + k n
static long n;
static double sink;

static void run_primal(void) { sink += f(0.7, x, out, n); }

static vec4 run_width(void) {
    for (long i = 0; i < W * n; i++) dx[i] = 0, dout[i] = 0.25 * (double)(i / n);
    augmented a = __enzyme_augmentfwd((void *)f, enzyme_width, W, 0.7, enzyme_dupv, (long)(n * 8), x, dx,
                                      enzyme_dupv, (long)(n * 8), out, dout, enzyme_const, n);
    sink += a.value;
    return __enzyme_reverse4((void *)f, enzyme_width, W, 0.7, enzyme_dupv, (long)(n * 8), x, dx, enzyme_dupv,
                             (long)(n * 8), out, dout, enzyme_const, n, 1.0, 1.0, 1.0, 1.0, a.tape);
}

static vec4 run_scalar(void) {
    vec4 r;
    for (int k = 0; k < W; k++) {
        double *dxk = dx + k * n, *doutk = dout + k * n;
        for (long i = 0; i < n; i++) dxk[i] = 0, doutk[i] = 0.25 * k;
        augmented a = __enzyme_augmentfwd((void *)f, 0.7, enzyme_dup, x, dxk, enzyme_dup, out, doutk, enzyme_const, n);
        sink += a.value;
        r.d[k] = __enzyme_reverse((void *)f, 0.7, enzyme_dup, x, dxk, enzyme_dup, out, doutk, enzyme_const, n, 1.0,
                                  a.tape);
    }
    return r;
}

static void time_width(void) { (void)run_width(); }
static void time_scalar(void) { (void)run_scalar(); }

int main(int argc, char **argv) {
    n = argc > 1 ? atol(argv[1]) : 4000;
    int reps = argc > 2 ? atoi(argv[2]) : 21, inner = argc > 3 ? atoi(argv[3]) : 20;
    x = malloc(n * sizeof *x), out = malloc(n * sizeof *out);
    dx = malloc(W * n * sizeof *dx), dout = malloc(W * n * sizeof *dout);
    double *check = malloc(W * n * sizeof *check);
    for (long i = 0; i < n; i++) x[i] = sin(0.01 * (double)i);
    vec4 a = run_scalar();
    for (long i = 0; i < W * n; i++) check[i] = dx[i];
    vec4 b = run_width();
    double err = 0;
    for (int k = 0; k < W; k++) err = fmax(err, fabs(a.d[k] - b.d[k]) / fmax(1.0, fabs(a.d[k])));
    for (long i = 0; i < W * n; i++) err = fmax(err, fabs(check[i] - dx[i]) / fmax(1.0, fabs(check[i])));
    printf("n %ld, width %d: lanes vs width 1, max relative difference %.2g\n", n, W, err);
    if (err > 1e-12) return 1;
    void (*const runs[3])(void) = {run_primal, time_width, time_scalar};
    double median[3];
    time_alternating(runs, reps, inner, median);
    double p = median[0], w = median[1], s = median[2];
    printf("primal %.1f us; width %d pair %.1f us (%.2fx primal); width 1 x %d pairs %.1f us (%.2fx primal); "
           "width %d / width 1 x %d = %.2f\n", 1e6 * p, W, 1e6 * w, w / p, W, 1e6 * s, s / p, W, W, w / s);
    return sink == 12345.0;
}
