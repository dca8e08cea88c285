/* A problem struct of pointers given by the caller, differentiated through its fields:
   the cost of the null-shadow check (src/zymase/autodiff/null_shadows.py, session 33) on
   the accesses through pointers loaded from a shadow struct. The loop writes through
   p->y, which may alias the struct, so the fields are loaded again in every iteration
   and so is each check. Prints `struct fields n=N  rev T ms  fwd T ms` per call, for
   bench/c_before_after.py:

       python bench/c_before_after.py --zymase before=/work/base33/src --zymase after=src \
           --program bench/struct_fields.c --args "1000000 20" --rounds 5
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int enzyme_dup;
extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

struct problem {
    const double *a;
    double *x, *y;
    long n;
};

static double loss(struct problem *p) {
    double s = 0.0;
    for (long i = 0; i < p->n; i++) {
        p->y[i] = p->a[i] * p->x[i] * p->x[i];
        s += p->y[i] * p->x[i];
    }
    return s;
}

__attribute__((noinline)) void grad(struct problem *p, struct problem *dp) {
    __enzyme_autodiff((void *)loss, enzyme_dup, p, dp);
}

__attribute__((noinline)) double tangent(struct problem *p, struct problem *dp) {
    return __enzyme_fwddiff((void *)loss, enzyme_dup, p, dp);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    double *a = malloc(n * sizeof(double)), *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    double *za = calloc(n, sizeof(double)), *dx = calloc(n, sizeof(double)), *dy = calloc(n, sizeof(double));
    for (long i = 0; i < n; i++) a[i] = 1.0 + 1e-3 * (i % 1000), x[i] = 0.5 - 1e-7 * i;
    struct problem p = {a, x, y, n}, dp = {za, dx, dy, n};
    double best_rev = 1e30, best_fwd = 1e30, s = 0.0;
    for (int r = 0; r < reps; r++) {
        for (long i = 0; i < n; i++) dx[i] = dy[i] = 0.0;  /* (the tangent call wrote dy) */
        double t0 = now();
        grad(&p, &dp);
        double t1 = now();
        s += tangent(&p, &dp);
        double t2 = now();
        best_rev = fmin(best_rev, t1 - t0), best_fwd = fmin(best_fwd, t2 - t1);
    }
    /* d/dx_i of sum a x^3 is 3 a x^2 (the last gradient; the tangent reads it as its seed) */
    double want = 3.0 * a[7] * x[7] * x[7];
    if (fabs(dx[7] - want) > 1e-9 * fabs(want) || !(s == s)) {
        printf("wrong: dx[7] = %.17g, want %.17g\n", dx[7], want);
        return 1;
    }
    printf("struct fields n=%ld  rev %.3f ms  fwd %.3f ms\n", n, 1e3 * best_rev, 1e3 * best_fwd);
    return 0;
}
