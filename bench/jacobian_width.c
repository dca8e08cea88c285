// Jacobian of an R^n -> R^n stencil by vector forward mode (issue 25: "Jacobian of an
// R^n -> R^n stencil by vector forward mode at width 8: at most 3x the primal per 8
// columns"). One process, the three runs alternating, medians of `reps` rounds, each
// round timing `inner` calls:
//   primal        one call of the stencil
//   width 8       one __enzyme_fwddiff at enzyme_width 8 (enzyme_dupv): 8 columns
//   width 1 x 8   eight scalar __enzyme_fwddiff calls: the same 8 columns
// Two stencils: a reaction-diffusion residual with a transcendental reaction term
// (`reaction`) and a purely polynomial one (`poly`, memory- and arithmetic-bound: its
// tangents move 8x the primal's bytes). Checks that width 8 equals width 1 x 8.
//   zymase cc -O2 bench/jacobian_width.c -o /tmp/jacobian_width && /tmp/jacobian_width 2000 21 50
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int enzyme_const, enzyme_dup, enzyme_dupnoneed, enzyme_width, enzyme_dupv, enzyme_dupnoneedv;
extern void __enzyme_fwddiff(void *, ...);

static void reaction(const double *x, double *out, long n) {
    for (long i = 1; i + 1 < n; i++)
        out[i] = x[i - 1] - 2.0 * x[i] + x[i + 1] + exp(-x[i] * x[i]) * sin(x[i + 1]);
    out[0] = x[0];
    out[n - 1] = x[n - 1];
}

static void poly(const double *x, double *out, long n) {
    for (long i = 1; i + 1 < n; i++)
        out[i] = x[i - 1] - 2.0 * x[i] + x[i + 1] + 0.1 * x[i] * x[i] * x[i + 1];
    out[0] = x[0];
    out[n - 1] = x[n - 1];
}

typedef void (*stencil_fn)(const double *, double *, long);

#define RUNNERS(F)                                                                                               \
    __attribute__((noinline)) static void F##_primal(const double *x, double *out, const double *s, double *d,     \
                                                     long n) {                                                   \
        (void)s, (void)d;                                                                                        \
        F(x, out, n);                                                                                            \
    }                                                                                                            \
    __attribute__((noinline)) static void F##_width8(const double *x, double *out, const double *s, double *d,     \
                                                     long n) {                                                   \
        long stride = n * (long)sizeof(double);                                                                  \
        __enzyme_fwddiff((void *)F, enzyme_width, 8, enzyme_dupv, stride, x, s, enzyme_dupnoneedv, stride, out, d, \
                         enzyme_const, n);                                                                       \
    }                                                                                                            \
    __attribute__((noinline)) static void F##_width1(const double *x, double *out, const double *s, double *d,     \
                                                     long n) {                                                   \
        for (int k = 0; k < 8; k++)                                                                              \
            __enzyme_fwddiff((void *)F, enzyme_dup, x, s + k * n, enzyme_dupnoneed, out, d + k * n, enzyme_const, n); \
    }
RUNNERS(reaction)
RUNNERS(poly)

typedef void (*runner)(const double *, double *, const double *, double *, long);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int measure(const char *name, runner run[3], long n, int reps, int inner) {
    double *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    double *seeds = malloc(8 * n * sizeof *seeds), *d8 = malloc(8 * n * sizeof *d8), *d1 = malloc(8 * n * sizeof *d1);
    for (long i = 0; i < n; i++) x[i] = sin(0.001 * i);
    for (long i = 0; i < 8 * n; i++) seeds[i] = cos(0.37 * i);
    double *t[3];
    for (int m = 0; m < 3; m++) t[m] = malloc(reps * sizeof(double));
    double *douts[3] = {d1, d8, d1};
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < 3; m++) {
            double a = now();
            for (int k = 0; k < inner; k++) run[m](x, out, seeds, douts[m], n);
            t[m][r] = (now() - a) / inner;
        }
    double worst = 0;
    for (long i = 0; i < 8 * n; i++) worst = fmax(worst, fabs(d8[i] - d1[i]) / fmax(1.0, fabs(d1[i])));
    for (int m = 0; m < 3; m++) qsort(t[m], reps, sizeof(double), cmp);
    double p = t[0][reps / 2], w8 = t[1][reps / 2], w1 = t[2][reps / 2];
    printf("%-8s n=%ld primal %8.2f us | width 8: %8.2f us = %5.2fx primal | width 1 x 8: %8.2f us = %5.2fx primal"
           " | width 8 / width 1 x 8 = %.2f | max rel diff %.1e\n",
           name, n, 1e6 * p, 1e6 * w8, w8 / p, 1e6 * w1, w1 / p, w8 / w1, worst);
    free(x), free(out), free(seeds), free(d8), free(d1);
    for (int m = 0; m < 3; m++) free(t[m]);
    return worst > 1e-12;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000;
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    int inner = argc > 3 ? atoi(argv[3]) : 50;
    runner r[3] = {reaction_primal, reaction_width8, reaction_width1};
    runner p[3] = {poly_primal, poly_width8, poly_width1};
    int bad = measure("reaction", r, n, reps, inner);
    bad |= measure("poly", p, n, reps, inner);
    return bad;
}
