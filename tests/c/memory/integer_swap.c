/* Doubles swapped and duplicated through 64-bit integers with a write between the load and
   the store (session 32): `memcpy(&a, &c[i], 8); memcpy(&b, &c[j], 8); memcpy(&c[i], &b, 8);
   memcpy(&c[j], &a, 8)` (a swap, as Rust's slice::swap and generic C swaps write it) becomes
   at -O1..-O3 two i64 loads and two crossing i64 stores, and the same value stored twice with
   other writes between (c-mem fuzz seed 970205 at -O1) too. Refused before ("the bits of a
   float ... merged"): the integer copy became a memcpy only when nothing could write memory
   between the load and its stores; now the bytes go through a stack slot
   (transforms/integer_copies). Reverse and forward against closed forms. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup;

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
#define NMAX 16

static void swap_bits(double *c, int i, int j) {
    uint64_t a, b;
    memcpy(&a, &c[i], 8);
    memcpy(&b, &c[j], 8);
    memcpy(&c[i], &b, 8);
    memcpy(&c[j], &a, 8);
}

/* c = x with c_0 <-> c_{n-1} and c_1 <-> c_2 swapped; sum (k + 1) c_k^2 */
static double swapped(const double *x, int n) {
    double *c = malloc((size_t)n * sizeof(double));
    memcpy(c, x, (size_t)n * sizeof(double));
    swap_bits(c, 0, n - 1);
    swap_bits(c, 1, 2);
    double r = 0.0;
    for (int k = 0; k < n; k++)
        r += (k + 1) * c[k] * c[k];
    free(c);
    return r;
}

/* x_0's bits stored twice, with a write to the buffer between: c = [x_0, x_1, ..., x_0];
   sum (k + 1) c_k^3 */
static double twice(const double *x, int n) {
    double *c = malloc((size_t)n * sizeof(double));
    uint64_t a;
    memcpy(&a, &x[0], 8);
    memcpy(c, &a, 8);
    for (int k = 1; k < n - 1; k++)
        c[k] = x[k];
    memcpy(&c[n - 1], &a, 8);
    double r = 0.0;
    for (int k = 0; k < n; k++)
        r += (k + 1) * c[k] * c[k] * c[k];
    free(c);
    return r;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7 */
    double x0[NMAX], x[NMAX], dx[NMAX], t[NMAX], want[NMAX];
    for (int i = 0; i < n; i++) {
        x0[i] = sin(1.3 * i) + 0.2;
        t[i] = 0.3 * (i % 4) - 0.4;
    }
    /* swapped: position of x_j after the swaps, p(0) = n - 1, p(n-1) = 0, p(1) = 2, p(2) = 1 */
    for (int j = 0; j < n; j++) {
        int p = j == 0 ? n - 1 : j == n - 1 ? 0 : j == 1 ? 2 : j == 2 ? 1 : j;
        want[j] = 2.0 * (p + 1) * x0[j];
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)swapped, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int j = 0; j < n; j++) {
        check("swapped dx", j, dx[j], want[j], TOL);
        fwd += want[j] * t[j];
    }
    check("swapped forward", 0, __enzyme_fwddiff((void *)swapped, enzyme_dup, x, t, n), fwd, TOL);

    /* twice: r = (1 + n) x_0^3 + sum_{0<k<n-1} (k + 1) x_k^3 */
    fwd = 0.0;
    for (int j = 0; j < n; j++) {
        want[j] = j == 0 ? 3.0 * (1 + n) * x0[0] * x0[0] : j < n - 1 ? 3.0 * (j + 1) * x0[j] * x0[j] : 0.0;
        fwd += want[j] * t[j];
    }
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)twice, enzyme_dup, x, dx, n);
    for (int j = 0; j < n; j++)
        check("twice dx", j, dx[j], want[j], TOL);
    check("twice forward", 0, __enzyme_fwddiff((void *)twice, enzyme_dup, x, t, n), fwd, TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
