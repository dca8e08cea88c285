/* Shared helpers for the bench workloads: timing, finite differences, JSON output.
   Included by every workload in bench/workloads; contains no differentiated code. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;

static double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Calls fn(ctx) repeatedly until at least min_s seconds have passed (one batch), for `repeats`
   batches, and returns the best per-call time over the batches. */
static double bench_time(void (*fn)(void *), void *ctx, double min_s, int repeats) {
    double best = INFINITY;
    fn(ctx); /* warm up */
    for (int r = 0; r < repeats; r++) {
        long calls = 0;
        double t0 = bench_now(), t;
        do {
            fn(ctx);
            calls++;
            t = bench_now();
        } while (t - t0 < min_s);
        double per = (t - t0) / (double)calls;
        if (per < best) best = per;
    }
    return best;
}

/* Seconds per timing batch and number of batches; BENCH_MIN_S / BENCH_REPEATS override. */
static double bench_min_s(void) {
    const char *s = getenv("BENCH_MIN_S");
    return s ? atof(s) : 0.2;
}
static int bench_repeats(void) {
    const char *s = getenv("BENCH_REPEATS");
    return s ? atoi(s) : 3;
}

/* Deterministic uniform numbers in [0, 1) (64-bit LCG, top 53 bits). */
static unsigned long long bench_rng_state = 0x2545F4914F6CDD1DULL;
static void bench_seed(unsigned long long s) { bench_rng_state = s * 6364136223846793005ULL + 1442695040888963407ULL; }
static double bench_uniform(void) {
    bench_rng_state = bench_rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(bench_rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* Fourth-order central difference of f along x[i]: f is evaluated by eval(ctx) with x[i]
   perturbed, and x[i] is restored afterwards. */
static double bench_fd(double (*eval)(void *), void *ctx, double *x, long i) {
    double x0 = x[i];
    double h = 1e-3 * (fabs(x0) > 1.0 ? fabs(x0) : 1.0);
    double f[4];
    const double off[4] = {-2.0, -1.0, 1.0, 2.0};
    for (int k = 0; k < 4; k++) {
        x[i] = x0 + off[k] * h;
        f[k] = eval(ctx);
    }
    x[i] = x0;
    return (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);
}

/* Relative error of a gradient entry g against its finite-difference estimate fd. The floor
   `scale` (e.g. 1e-6 times the largest gradient entry) keeps near-zero entries from dominating. */
static double bench_rel_err(double g, double fd, double scale) {
    double d = fabs(g) > fabs(fd) ? fabs(g) : fabs(fd);
    if (d < scale) d = scale;
    if (d == 0.0) return 0.0;
    double e = fabs(g - fd) / d;
    return e == e ? e : INFINITY;
}

/* Checks `count` entries of grad (spread over [0, len), moving past entries below 1e-3 of the
   largest |grad|) against finite differences of eval, perturbing x; returns the largest
   relative error. */
static double bench_check(const char *name, double (*eval)(void *), void *ctx, double *x,
                          const double *grad, long len, int count) {
    double gmax = 0.0, worst = 0.0;
    for (long i = 0; i < len; i++)
        if (fabs(grad[i]) > gmax) gmax = fabs(grad[i]);
    for (int k = 0; k < count && k < len; k++) {
        long i = count > 1 ? (long)((double)k * (double)(len - 1) / (double)(count - 1)) : 0;
        if (k == 1 && len > 2) i = 1 + (len - 2) / 3; /* avoid only-aligned picks */
        /* skip entries below 1e-3 of the largest: finite-difference roundoff dominates them */
        for (long step = 0; step < len && fabs(grad[i]) < 1e-3 * gmax; step++)
            i = (i + 1) % len;
        double fd = bench_fd(eval, ctx, x, i);
        double e = bench_rel_err(grad[i], fd, 1e-6 * gmax);
        if (getenv("BENCH_VERBOSE"))
            fprintf(stderr, "%s[%ld]: grad %.12g fd %.12g rel %.2e\n", name, i, grad[i], fd, e);
        if (e > worst) worst = e;
    }
    return worst;
}

#define BENCH_TOL 1e-5
#define BENCH_PI 3.14159265358979323846

static int bench_report(const char *workload, const char *size, double primal_s, double grad_s,
                        double err) {
    printf("{\"workload\": \"%s\", \"size\": \"%s\", \"primal_s\": %.6e, \"grad_s\": %.6e, "
           "\"ratio\": %.3f, \"max_rel_err_fd\": %.3e}\n",
           workload, size, primal_s, grad_s, grad_s / primal_s, err);
    if (!(err <= BENCH_TOL)) {
        fprintf(stderr, "%s: gradient does not match finite differences (max rel err %.3e > %.0e)\n",
                workload, err, BENCH_TOL);
        return 1;
    }
    return 0;
}

#endif
