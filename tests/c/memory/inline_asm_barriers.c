/* Inline assembly that benchmark harnesses put around derivative calls: compiler barriers
   (`asm volatile("" ::: "memory")`), "do not optimize" escapes of the inputs and outputs,
   a cycle counter read inside the differentiated function. Until session 33 the reader
   refused any inline assembly in the part of the module zymase imports, main included. */
#include <stdio.h>
#include <stdint.h>
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

#define TOL 1e-10
#define N 5

/* "do not optimize": the compiler must assume the asm reads and writes *p */
static void escape(void *p) { __asm__ __volatile__("" : : "r"(p) : "memory"); }
static void clobber(void) { __asm__ __volatile__("" : : : "memory"); }

static uint64_t ticks(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

static volatile uint64_t elapsed;

/* sum_i w_i x_i^3 + sin(x_i): a barrier in the loop and a cycle count around it */
static double energy(const double *x, const double *w, int n) {
    uint64_t t0 = ticks();
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        clobber();
        s += w[i] * x[i] * x[i] * x[i] + sin(x[i]);
    }
    elapsed = ticks() - t0;
    return s;
}

int main(void) {
    double x[N], w[N], dx[N], tx[N];
    for (int i = 0; i < N; i++) {
        x[i] = 0.3 + 0.4 * i;
        w[i] = 1.5 - 0.25 * i;
        tx[i] = 0.5 - 0.2 * i;
    }
    for (int round = 0; round < 3; round++) {
        escape(x);
        for (int i = 0; i < N; i++) dx[i] = 0.0;
        clobber();
        __enzyme_autodiff((void *)energy, enzyme_dup, x, dx, enzyme_const, w, N);
        escape(dx);
        clobber();
    }
    double tangent = __enzyme_fwddiff((void *)energy, enzyme_dup, x, tx, enzyme_const, w, N);
    escape(&tangent);
    double want_tangent = 0.0;
    for (int i = 0; i < N; i++) {
        double d = 3.0 * w[i] * x[i] * x[i] + cos(x[i]);
        check("reverse d/dx_i", x[i], dx[i], d, TOL);
        want_tangent += d * tx[i];
    }
    check("forward along t", 0.0, tangent, want_tangent, TOL);
    return failures != 0;
}
