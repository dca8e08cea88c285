// Jacobian of an R^n -> R^n stencil by vector forward mode (issue 25: "Jacobian of an
// R^n -> R^n stencil by vector forward mode at width 8: at most 3x the primal per 8
// columns"). One process, the five runs alternating, medians of `reps` rounds (thread CPU
// time: the machine is shared), each round timing `inner` calls:
//   primal        one call of the stencil
//   width 8       one __enzyme_fwddiff at enzyme_width 8 (enzyme_dupv): 8 columns
//   width 1 x 8   eight scalar __enzyme_fwddiff calls: the same 8 columns
//   hand          REFERENCE, not a workload: the same 8 columns written by hand in C, with
//                 the same memory layout as the width-8 call (lane k's seeds at s + k n, its
//                 tangents at d + k n), compiled in this file with the same flags. The
//                 stencil's partials are computed once per point and each lane is
//                 s[i-1] + a s[i] + b s[i+1], lanes inside the loop over points, as the
//                 derivative's loop is; it skips the primal output (enzyme_dupnoneedv).
//   hand blocked  REFERENCE: the same, the partials of 256 points at a time into a local
//                 buffer, then each lane along those points (the fastest form found by hand).
// The hand columns are the floor a derivative with this layout can be held to: the target
// "3x the primal" needs hand / primal <= 3 first.
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

// The stencils' partials at point i: d out[i] / d x[i] and d out[i] / d x[i+1] (d x[i-1] is 1).
static inline void reaction_partials(const double *x, long i, double *a, double *b) {
    double e = exp(-x[i] * x[i]);
    *a = -2.0 - 2.0 * x[i] * e * sin(x[i + 1]);
    *b = 1.0 + e * cos(x[i + 1]);
}

static inline void poly_partials(const double *x, long i, double *a, double *b) {
    *a = -2.0 + 0.2 * x[i] * x[i + 1];
    *b = 1.0 + 0.1 * x[i] * x[i];
}

#define BLOCK 256

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
    }                                                                                                            \
    __attribute__((noinline)) static void F##_hand(const double *x, double *out, const double *restrict s,          \
                                                   double *restrict d, long n) {                                 \
        (void)out;                                                                                               \
        for (long i = 1; i + 1 < n; i++) {                                                                       \
            double a, b;                                                                                         \
            F##_partials(x, i, &a, &b);                                                                          \
            for (int k = 0; k < 8; k++) {                                                                        \
                const double *sk = s + k * n;                                                                    \
                d[k * n + i] = sk[i - 1] + a * sk[i] + b * sk[i + 1];                                            \
            }                                                                                                    \
        }                                                                                                        \
        for (int k = 0; k < 8; k++) d[k * n] = s[k * n], d[k * n + n - 1] = s[k * n + n - 1];                    \
    }                                                                                                            \
    __attribute__((noinline)) static void F##_hand_blocked(const double *x, double *out, const double *restrict s,  \
                                                           double *restrict d, long n) {                         \
        (void)out;                                                                                               \
        double a[BLOCK], b[BLOCK];                                                                               \
        for (long i0 = 1; i0 + 1 < n; i0 += BLOCK) {                                                             \
            long m = n - 1 - i0 < BLOCK ? n - 1 - i0 : BLOCK;                                                    \
            for (long j = 0; j < m; j++) F##_partials(x, i0 + j, &a[j], &b[j]);                                  \
            for (int k = 0; k < 8; k++) {                                                                        \
                const double *restrict sk = s + k * n + i0;                                                      \
                double *restrict dk = d + k * n + i0;                                                            \
                for (long j = 0; j < m; j++) dk[j] = sk[j - 1] + a[j] * sk[j] + b[j] * sk[j + 1];                \
            }                                                                                                    \
        }                                                                                                        \
        for (int k = 0; k < 8; k++) d[k * n] = s[k * n], d[k * n + n - 1] = s[k * n + n - 1];                    \
    }
RUNNERS(reaction)
RUNNERS(poly)

typedef void (*runner)(const double *, double *, const double *, double *, long);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { RUNS = 5 };
static const char *const run_names[RUNS] = {"primal", "width 8", "width 1 x 8", "hand", "hand blocked"};

static int measure(const char *name, runner run[RUNS], long n, int reps, int inner) {
    double *x = malloc(n * sizeof *x), *out = malloc(n * sizeof *out);
    double *seeds = malloc(8 * n * sizeof *seeds), *d[RUNS];
    for (int m = 0; m < RUNS; m++) d[m] = malloc(8 * n * sizeof(double));
    for (long i = 0; i < n; i++) x[i] = sin(0.001 * i);
    for (long i = 0; i < 8 * n; i++) seeds[i] = cos(0.37 * i);
    double *t[RUNS];
    for (int m = 0; m < RUNS; m++) t[m] = malloc(reps * sizeof(double));
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < RUNS; m++) {
            double a = now();
            for (int k = 0; k < inner; k++) run[m](x, out, seeds, d[m], n);
            t[m][r] = (now() - a) / inner;
        }
    // width 8 against width 1 x 8 (must agree to rounding); the hand-written columns too
    double worst = 0, worst_hand = 0;
    for (long i = 0; i < 8 * n; i++) {
        double scale = fmax(1.0, fabs(d[2][i]));
        worst = fmax(worst, fabs(d[1][i] - d[2][i]) / scale);
        for (int m = 3; m < RUNS; m++) worst_hand = fmax(worst_hand, fabs(d[m][i] - d[2][i]) / scale);
    }
    for (int m = 0; m < RUNS; m++) qsort(t[m], reps, sizeof(double), cmp);
    double p = t[0][reps / 2];
    printf("%-8s n=%ld primal %8.2f us", name, n, 1e6 * p);
    for (int m = 1; m < RUNS; m++) printf(" | %s %8.2f us = %5.2fx", run_names[m], 1e6 * t[m][reps / 2], t[m][reps / 2] / p);
    printf(" | width 8 / width 1 x 8 = %.2f | width 8 / hand = %.2f | max rel diff %.1e (hand %.1e)\n",
           t[1][reps / 2] / t[2][reps / 2], t[1][reps / 2] / t[3][reps / 2], worst, worst_hand);
    free(x), free(out), free(seeds);
    for (int m = 0; m < RUNS; m++) free(t[m]), free(d[m]);
    return worst > 1e-12 || worst_hand > 1e-12;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000;
    int reps = argc > 2 ? atoi(argv[2]) : 21;
    int inner = argc > 3 ? atoi(argv[3]) : 50;
    runner r[RUNS] = {reaction_primal, reaction_width8, reaction_width1, reaction_hand, reaction_hand_blocked};
    runner p[RUNS] = {poly_primal, poly_width8, poly_width1, poly_hand, poly_hand_blocked};
    int bad = measure("reaction", r, n, reps, inner);
    bad |= measure("poly", p, n, reps, inner);
    return bad;
}
