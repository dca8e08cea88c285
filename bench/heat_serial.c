// Serial 1-D heat equation (bench/mpi_heat.c's serial program): gradient / primal in
// process CPU time, the minimum of ROUNDS runs each, alternating (issue 27: the reverse of
// the stencil loop, src/zymase/autodiff/stencil_gather.py). A/B: build once more with
// ZYMASE_NO_GATHER=1 in the environment (and --no-cache) and alternate the two binaries.
//
//   zymase cc -O2 bench/heat_serial.c -o /tmp/heat_serial -lm && /tmp/heat_serial 100000 100 7
//
// (arguments: cells, steps, rounds; -DCUBIC=0.05 adds mpi_heat.c's nonlinear term.) The
// last number printed is a checksum of the gradient, equal across builds.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;
#define R 0.25
#ifndef CUBIC
#define CUBIC 0.0
#endif
static void step(const double *u, double *v, int n) {
    for (int i = 1; i <= n; i++)
        v[i] = u[i] + R * (u[i - 1] - 2 * u[i] + u[i + 1]) - CUBIC * u[i] * u[i] * u[i];
}
void heat_serial(const double *u0, double *uT, int n, int steps) {
    double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    for (int i = 0; i < n; i++) a[i + 1] = u0[i];
    for (int t = 0; t < steps; t++) {
        a[0] = a[n];
        a[n + 1] = a[1];
        step(a, b, n);
        double *s = a; a = b; b = s;
    }
    for (int i = 0; i < n; i++) uT[i] = a[i + 1];
    free(a);
    free(b);
}
static double cpu(void) { struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000, steps = argc > 2 ? atoi(argv[2]) : 100, rounds = argc > 3 ? atoi(argv[3]) : 7;
    double *u0 = malloc(n * 8), *du0 = calloc(n, 8), *uT = malloc(n * 8), *duT = malloc(n * 8);
    for (int i = 0; i < n; i++) u0[i] = 0.5 + 0.4 * sin(0.01 * i);
    double bp = 1e9, bg = 1e9, chk = 0;
    for (int k = 0; k < rounds; k++) {
        double t0 = cpu();
        heat_serial(u0, uT, n, steps);
        double t1 = cpu();
        for (int i = 0; i < n; i++) duT[i] = 1.0 + 0.001 * (i % 97);
        memset(du0, 0, n * 8);
        double t2 = cpu();
        __enzyme_autodiff((void *)heat_serial, enzyme_dup, u0, du0, enzyme_dupnoneed, uT, duT, enzyme_const, n, enzyme_const, steps);
        double t3 = cpu();
        if (t1 - t0 < bp) bp = t1 - t0;
        if (t3 - t2 < bg) bg = t3 - t2;
    }
    for (int i = 0; i < n; i++) chk += du0[i] * (1 + i % 7);
    printf("primal %.4f gradient %.4f ratio %.2f check %.12g\n", bp, bg, bg / bp, chk);
    return 0;
}
