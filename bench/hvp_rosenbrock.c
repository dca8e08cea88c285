// Hessian-vector product of Rosenbrock by forward mode over a reverse-mode gradient in C
// (issue 25 Performance: "Hessian-vector product through fwd-over-rev in C (Rosenbrock,
// n = 10^5): at most 6x the primal"). One process, the runs alternating round by round,
// the best of `reps` rounds, each round timing `inner` calls:
//   primal   rosen(x)
//   grad     __enzyme_autodiff(rosen, x, g)
//   hvp      __enzyme_fwddiff(grad, x, v, g, hv): H v in one call
// Checks hv against the closed-form Hessian of Rosenbrock (tridiagonal) times v.
//   zymase cc -O2 bench/hvp_rosenbrock.c -o /tmp/hvp_rosenbrock && /tmp/hvp_rosenbrock 100000 7 20
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;
extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);

static double rosen(const double *x, long n) {
    double s = 0.0;
    for (long i = 0; i + 1 < n; i++) {
        double d = x[i + 1] - x[i] * x[i], e = 1.0 - x[i];
        s += 100.0 * d * d + e * e;
    }
    return s;
}

__attribute__((noinline)) static void grad(const double *x, double *g, long n) {
    for (long i = 0; i < n; i++) g[i] = 0.0;
    __enzyme_autodiff((void *)rosen, enzyme_dup, x, g, enzyme_const, n);
}

__attribute__((noinline)) static void hvp(const double *x, const double *v, double *g, double *hv, long n) {
    __enzyme_fwddiff((void *)grad, enzyme_dup, x, v, enzyme_dupnoneed, g, hv, enzyme_const, n);
}

__attribute__((noinline)) static double primal(const double *x, long n) { return rosen(x, n); }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int reps = argc > 2 ? atoi(argv[2]) : 7, inner = argc > 3 ? atoi(argv[3]) : 20;
    double *x = malloc(n * sizeof *x), *v = malloc(n * sizeof *v), *g = malloc(n * sizeof *g),
           *hv = malloc(n * sizeof *hv);
    srand(1);
    for (long i = 0; i < n; i++) {
        x[i] = 2.0 * rand() / RAND_MAX - 1.0;
        v[i] = 2.0 * rand() / RAND_MAX - 1.0;
    }
    hvp(x, v, g, hv, n);
    double worst = 0.0;  // H v from the closed form: H is tridiagonal
    for (long i = 0; i < n; i++) {
        double h = 0.0;
        if (i + 1 < n) h += (1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0) * v[i] - 400.0 * x[i] * v[i + 1];
        if (i > 0) h += 200.0 * v[i] - 400.0 * x[i - 1] * v[i - 1];
        double err = fabs(hv[i] - h) / (1.0 + fabs(h));
        if (err > worst) worst = err;
    }
    if (worst > 1e-12) {
        printf("FAIL: hvp differs from the closed form by %g\n", worst);
        return 1;
    }
    double best[3] = {1e30, 1e30, 1e30}, sink = 0.0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int k = 0; k < inner; k++) {
            __asm__ volatile("" ::: "memory");  // x may have changed: no hoisting
            sink += primal(x, n);
        }
        double t1 = now();
        for (int k = 0; k < inner; k++) grad(x, g, n);
        double t2 = now();
        for (int k = 0; k < inner; k++) hvp(x, v, g, hv, n);
        double t3 = now();
        double t[3] = {t1 - t0, t2 - t1, t3 - t2};
        for (int j = 0; j < 3; j++) if (t[j] / inner < best[j]) best[j] = t[j] / inner;
    }
    printf("n = %ld (checksum %g, %g)\n", n, sink, g[0] + hv[0]);
    printf("  primal %10.1f us\n  grad   %10.1f us\n  hvp    %10.1f us\n", best[0] * 1e6, best[1] * 1e6,
           best[2] * 1e6);
    printf("  grad / primal = %.2f   hvp / primal = %.2f   hvp / grad = %.2f\n", best[1] / best[0],
           best[2] / best[0], best[2] / best[1]);
    return 0;
}
