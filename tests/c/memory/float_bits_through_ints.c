/* The bits of doubles copied through integer memory (issue 23 item 6), as serializers and unions
   do: a uint64_t buffer filled and read with memcpy, a union written as double and read as
   uint64_t, memcpy into a long and back, a pack/unpack of an *out array through uint64_t words;
   reverse and forward. The derivative through these copies was 0 before. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* s = sum x_i^2, every x_i through a uint64_t word */
static double serialized(const double *x, int n) {
    uint64_t buf[16];
    for (int i = 0; i < n; i++) {
        uint64_t b;
        memcpy(&b, &x[i], sizeof b);
        buf[i] = b;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double v;
        memcpy(&v, &buf[i], sizeof v);
        s += v * v;
    }
    return s;
}

union bits { double d; uint64_t u; };

/* 3 a^2 through two unions */
static double through_union(double a) {
    union bits u1, u2;
    u1.d = a;
    u2.u = u1.u;
    return 3.0 * u2.d * u2.d;
}

/* sin(a) through a long */
static double through_long(double a) {
    long l;
    memcpy(&l, &a, sizeof l);
    double b;
    memcpy(&b, &l, sizeof b);
    return sin(b);
}

/* out_i = 2 x_{n-1-i}: x packed into words, words reversed, unpacked */
static void pack_reverse(const double *x, double *out, int n) {
    uint64_t words[16];
    for (int i = 0; i < n; i++)
        memcpy(&words[n - 1 - i], &x[i], sizeof(uint64_t));
    for (int i = 0; i < n; i++) {
        double v;
        memcpy(&v, &words[i], sizeof v);
        out[i] = 2.0 * v;
    }
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4; /* 5 */
    double x[NMAX], dx[NMAX], t[NMAX], out[NMAX], dout[NMAX];
    for (int i = 0; i < n; i++) { x[i] = 0.5 + 0.3 * i; t[i] = 0.1 * i - 0.2; }

    double fwd = 0.0;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)serialized, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) {
        check("serialized dx", i, dx[i], 2.0 * x[i], TOL);
        fwd += 2.0 * x[i] * t[i];
    }
    check("serialized forward", n, __enzyme_fwddiff((void *)serialized, enzyme_dup, x, t, n), fwd, TOL);

    for (double a = -1.25; a < 2.0; a += 1.5) {
        check("through_union", a, __enzyme_autodiff((void *)through_union, a), 6.0 * a, TOL);
        check("through_union forward", a, __enzyme_fwddiff((void *)through_union, a, 1.0), 6.0 * a, TOL);
        check("through_long", a, __enzyme_autodiff((void *)through_long, a), cos(a), TOL);
        check("through_long forward", a, __enzyme_fwddiff((void *)through_long, a, 1.0), cos(a), TOL);
    }

    for (int i = 0; i < n; i++) { dx[i] = 0.0; dout[i] = 1.0 + i; }
    __enzyme_autodiff((void *)pack_reverse, enzyme_dup, x, dx, enzyme_dup, out, dout, n);
    for (int i = 0; i < n; i++) {
        check("pack_reverse dx", i, dx[i], 2.0 * (1.0 + (n - 1 - i)), TOL);
        check("pack_reverse dout zeroed", i, dout[i], 0.0, TOL);
    }
    for (int i = 0; i < n; i++) dout[i] = 7.0;
    __enzyme_fwddiff((void *)pack_reverse, enzyme_dup, x, t, enzyme_dup, out, dout, n);
    for (int i = 0; i < n; i++)
        check("pack_reverse forward", i, dout[i], 2.0 * t[n - 1 - i], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
