/* The timing loop the vector-mode benchmarks share (split_width.c, fwdsplit_width.c,
   checkpoint_width.c): three runs (the primal, the width-N derivative, N width-1
   derivatives), alternating within each of `reps` rounds so that a noisy machine's load
   falls on all three alike, `inner` calls a round; the medians of thread CPU time per
   call. Included by each benchmark; not a workload. */
#ifndef ZYMASE_BENCH_WIDTH_TIMING_H
#define ZYMASE_BENCH_WIDTH_TIMING_H

#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median[m]: seconds per call of run[m] */
static void time_alternating(void (*const run[3])(void), int reps, int inner, double median[3]) {
    double *t[3];
    for (int m = 0; m < 3; m++) t[m] = malloc(reps * sizeof(double));
    for (int r = 0; r < reps; r++)
        for (int m = 0; m < 3; m++) {
            double t0 = now();
            for (int j = 0; j < inner; j++) run[m]();
            t[m][r] = (now() - t0) / inner;
        }
    for (int m = 0; m < 3; m++) {
        qsort(t[m], reps, sizeof(double), cmp);
        median[m] = t[m][reps / 2];
        free(t[m]);
    }
}

#endif
