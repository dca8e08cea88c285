/* malloc / calloc / free called through function pointers held in global structs
   (issue 23 item 3): `static const struct allocator { void *(*alloc)(size_t); ... }`
   and a `static` table that nothing writes. Memory from `A.alloc(n)` holds active data
   and must get a shadow; zymase used to refuse it at -O0 (LLVM resolves the calls only
   when optimizing) with a message about an 'llvm.call'. A table the program may change
   is refused with a clear error (tests/python/test_cli_errors.py, allocator_table.c).
   Reverse and forward against closed forms. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-8

struct allocator {
    void *(*alloc)(size_t);
    void *(*zalloc)(size_t, size_t);
    void (*release)(void *);
};

static const struct allocator heap = { malloc, calloc, free };
static struct allocator pool = { malloc, calloc, free }; /* never written: as good as const */

/* sum x_i^3 through a scratch t_i = x_i^2 from heap.alloc */
static double cubes(const double *x, int n) {
    double *t = heap.alloc((size_t)n * sizeof(double));
    for (int i = 0; i < n; i++) t[i] = x[i] * x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += t[i] * x[i];
    heap.release(t);
    return s;
}

/* prefix sums of x into a zeroed buffer from pool.zalloc, then sum of their squares */
static double prefix_energy(const double *x, int n) {
    double *p = pool.zalloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) p[i] = (i > 0 ? p[i - 1] : 0.0) + x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += p[i] * p[i];
    pool.release(p);
    return s;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* 6 */
    double x[NMAX], dx[NMAX], tx[NMAX], p[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.3 * i - 0.6;
        tx[i] = 1.0 - 0.2 * i;
        dx[i] = 0.0;
    }

    /* d/dx_i sum x^3 = 3 x_i^2 */
    __enzyme_autodiff((void *)cubes, enzyme_dup, x, dx, enzyme_const, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        check("cubes d/dx", i, dx[i], 3.0 * x[i] * x[i], TOL);
        fwd += 3.0 * x[i] * x[i] * tx[i];
        dx[i] = 0.0;
    }
    check("cubes forward", n, __enzyme_fwddiff((void *)cubes, enzyme_dup, x, tx, enzyme_const, n), fwd, TOL);

    /* E = sum_k P_k^2, P_k = sum_{i<=k} x_i: dE/dx_i = 2 sum_{k>=i} P_k */
    for (int k = 0; k < n; k++) p[k] = (k > 0 ? p[k - 1] : 0.0) + x[k];
    __enzyme_autodiff((void *)prefix_energy, enzyme_dup, x, dx, enzyme_const, n);
    double tail = 0.0;
    fwd = 0.0;
    for (int i = n - 1; i >= 0; i--) {
        tail += p[i];
        check("prefix_energy d/dx", i, dx[i], 2.0 * tail, TOL);
        fwd += 2.0 * tail * tx[i];
    }
    check("prefix_energy forward", n, __enzyme_fwddiff((void *)prefix_energy, enzyme_dup, x, tx, enzyme_const, n),
          fwd, TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
