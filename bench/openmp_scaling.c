// OpenMP gradients at 1 and 2 threads (issue 27 item 1, performance): a parallel map
// (out[i] = f(x[i])), a stencil (out[i] reads x[i-1], x[i], x[i+1]: atomic adjoint adds)
// and a sum reduction. For each kernel, rounds alternate 1 and 2 threads (the same
// executable, omp_set_num_threads) and primal and gradient, and the medians are compared:
//
//   zymase cc -O2 -fopenmp bench/openmp_scaling.c -o /tmp/openmp_scaling
//   /tmp/openmp_scaling 2000000 15 [KERNEL]
//
// prints per kernel: primal and gradient times at 1 and 2 threads, the 2-thread/1-thread
// ratio of the gradient, and gradient/primal at each thread count; then the same from the
// process's CPU time (all threads; run with KMP_BLOCKTIME=0 so that idle threads sleep),
// which a shared machine disturbs less than wall-clock time. KERNEL (map, stencil or
// reduction) runs one kernel only.
//
// The arrays are restrict: each region then only reads memory nothing overwrites before
// the reverse sweep, which recomputes it instead of taping it
// (src/zymase/autodiff/region_recompute.py). Without restrict, x and out may be one
// array (an in-place map): the derivative checks at run time whether the address ranges
// the loop touches overlap (src/zymase/autodiff/region_versioning.py) and recomputes
// the region when they do not, as here; overlapping, it forks the taped split pair,
// several times slower. Build with -DNO_RESTRICT to measure the checked path.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef NO_RESTRICT
#define RESTRICT
#else
#define RESTRICT restrict
#endif

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

void map(const double *RESTRICT x, double *RESTRICT out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

void stencil(const double *RESTRICT x, double *RESTRICT out, int n) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++) out[i] = x[i] + 0.2 * (x[i - 1] - 2 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i];
}

double reduce(const double *x, int n) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i];
    return s;
}

static double *x, *dx, *out, *dout;
static int n;

static void run(int kernel, int grad) {
    if (kernel == 0) {
        if (grad)
            __enzyme_autodiff((void *)map, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout, enzyme_const, n);
        else
            map(x, out, n);
    } else if (kernel == 1) {
        if (grad)
            __enzyme_autodiff((void *)stencil, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout, enzyme_const, n);
        else
            stencil(x, out, n);
    } else {
        if (grad)
            __enzyme_autodiff((void *)reduce, enzyme_dup, x, dx, enzyme_const, n);
        else
            out[0] = reduce(x, n);
    }
}

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
    n = argc > 1 ? atoi(argv[1]) : 2000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 15;
    x = malloc(n * sizeof *x);
    dx = calloc(n, sizeof *dx);
    out = calloc(n, sizeof *out);
    dout = malloc(n * sizeof *dout);
    for (int i = 0; i < n; i++) x[i] = 1e-6 * i;
    const char *names[] = {"map", "stencil", "reduction"};
    double *t = malloc(sizeof(double) * 4 * rounds), *cpu = malloc(sizeof(double) * 4 * rounds);
    for (int k = 0; k < 3; k++) {
        if (argc > 3 && strcmp(argv[3], names[k]) != 0) continue;
        for (int r = 0; r < rounds; r++)
            for (int c = 0; c < 4; c++) {  // (threads, grad) alternating within each round
                int threads = 1 + (c >> 1), grad = c & 1;
                omp_set_num_threads(threads);
                for (int i = 0; i < n; i++) dout[i] = 1.0;
                double t0 = omp_get_wtime(), c0 = cpu_seconds();
                run(k, grad);
                t[c * rounds + r] = omp_get_wtime() - t0;
                cpu[c * rounds + r] = cpu_seconds() - c0;
            }
        double med[4], cmed[4];
        for (int c = 0; c < 4; c++) {
            qsort(t + c * rounds, rounds, sizeof(double), cmp);
            qsort(cpu + c * rounds, rounds, sizeof(double), cmp);
            med[c] = t[c * rounds + rounds / 2];
            cmed[c] = cpu[c * rounds + rounds / 2];
        }
        printf("%-9s n=%d: primal %.2f / %.2f ms, gradient %.2f / %.2f ms (1 / 2 threads); "
               "gradient 2t/1t %.2f; gradient/primal %.2f (1t) %.2f (2t)\n",
               names[k], n, 1e3 * med[0], 1e3 * med[2], 1e3 * med[1], 1e3 * med[3], med[3] / med[1],
               med[1] / med[0], med[3] / med[2]);
        printf("%-9s CPU time: primal %.2f / %.2f ms, gradient %.2f / %.2f ms; gradient/primal %.2f (1t) %.2f (2t)\n",
               names[k], 1e3 * cmed[0], 1e3 * cmed[2], 1e3 * cmed[1], 1e3 * cmed[3], cmed[1] / cmed[0],
               cmed[3] / cmed[2]);
    }
    return 0;
}
