// Split forward mode in vector mode (issue 25 item 2, session 28): 4 tangents of one
// function by one __enzyme_augmentfwd + __enzyme_fwdsplit pair at enzyme_width 4 against
// one width-1 augmented pass whose tape four width-1 __enzyme_fwdsplit calls read
// (enzyme_nofree on the first three: Enzyme's way to apply one linearization several
// times), and against the primal. One process, the runs alternating, medians of `reps`
// rounds (thread CPU time: the machine is shared), each round timing `inner` calls.
// Both run the primal once; the width-4 tangent function reads the tape once for the 4
// lanes. Checks that the lanes of width 4 equal the width-1 results.
//   zymase cc -O2 bench/fwdsplit_width.c -o /tmp/fwdsplit_width && /tmp/fwdsplit_width 4000 21 20
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "width_timing.h"

extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_width, enzyme_nofree;
typedef struct { void *tape; double value; } augmented;
extern augmented __enzyme_augmentfwd(void *, ...);
extern double __enzyme_fwdsplit(void *, ...);
typedef struct { double d[4]; } vec4;
extern vec4 __enzyme_fwdsplit4(void *, ...);

#define W 4

__attribute__((always_inline)) static inline double body(double a, const double *x, double *out, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) {
        out[i] = exp(-a * x[i] * x[i]) * sin(x[i] + a);
        s += out[i] * (1.0 + 1e-3 * (double)i);
    }
    return s;
}
// one function per width: zymase before session 29 split a function at one width only
double f1(double a, const double *x, double *out, long n) { return body(a, x, out, n); }
double f4(double a, const double *x, double *out, long n) { return body(a, x, out, n); }

static double *x, *out, *dx, *dout;  // dx, dout: W lanes of n, lane k at + k n
static long n;
static double sink;

static void run_primal(void) { sink += f1(0.7, x, out, n); }

static vec4 run_width(void) {
    augmented a = __enzyme_augmentfwd((void *)f4, enzyme_width, W, 0.7, enzyme_dupv, (long)(n * 8), x, dx,
                                      enzyme_dupv, (long)(n * 8), out, dout, enzyme_const, n);
    sink += a.value;
    return __enzyme_fwdsplit4((void *)f4, enzyme_width, W, 0.7, 1.0, 0.5, -0.5, 0.25, enzyme_dupv, (long)(n * 8),
                              x, dx, enzyme_dupv, (long)(n * 8), out, dout, enzyme_const, n, a.tape);
}

static const double da[W] = {1.0, 0.5, -0.5, 0.25};

static vec4 run_scalar(void) {
    vec4 r;
    augmented a = __enzyme_augmentfwd((void *)f1, 0.7, enzyme_dup, x, dx, enzyme_dup, out, dout, enzyme_const, n);
    sink += a.value;
    for (int k = 0; k < W; k++) {
        double *dxk = dx + k * n, *doutk = dout + k * n;
        if (k < W - 1)
            r.d[k] = __enzyme_fwdsplit((void *)f1, enzyme_nofree, 0.7, da[k], enzyme_dup, x, dxk, enzyme_dup, out,
                                       doutk, enzyme_const, n, a.tape);
        else
            r.d[k] = __enzyme_fwdsplit((void *)f1, 0.7, da[k], enzyme_dup, x, dxk, enzyme_dup, out, doutk,
                                       enzyme_const, n, a.tape);
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
    for (long i = 0; i < W * n; i++) dx[i] = cos(0.003 * (double)i);
    vec4 a = run_scalar();
    for (long i = 0; i < W * n; i++) check[i] = dout[i];
    vec4 b = run_width();
    double err = 0;
    for (int k = 0; k < W; k++) err = fmax(err, fabs(a.d[k] - b.d[k]) / fmax(1.0, fabs(a.d[k])));
    for (long i = 0; i < W * n; i++) err = fmax(err, fabs(check[i] - dout[i]) / fmax(1.0, fabs(check[i])));
    printf("n %ld, width %d: lanes vs width 1, max relative difference %.2g (tangents %.4g %.4g %.4g %.4g)\n", n,
           W, err, a.d[0], a.d[1], a.d[2], a.d[3]);
    if (err > 1e-12) return 1;
    void (*const runs[3])(void) = {run_primal, time_width, time_scalar};
    double median[3];
    time_alternating(runs, reps, inner, median);
    double p = median[0], w = median[1], s = median[2];
    printf("primal %.1f us; width %d pair %.1f us (%.2fx primal); one tape, width 1 x %d fwdsplit %.1f us (%.2fx "
           "primal); width %d / width 1 x %d = %.2f\n", 1e6 * p, W, 1e6 * w, w / p, W, 1e6 * s, s / p, W, W, w / s);
    return sink == 12345.0;
}
