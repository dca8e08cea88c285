/* Copies into the tail of a buffer at a run-time offset below its end (c + n - 2, c + o with
   o = n - 1): LLVM writes the destination as &c[n] - 16, a pointer a constant below the end of
   a dynamic GEP, whose bytes the type analysis knew nothing of (the copies were refused, the
   first at every level, the second at -O1..-O3: "bytes [0, 16) ... are never read or written with a known type"; found while
   reducing fuzz --lang c-mem seed 970205); reverse and forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

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

/* c = [0, ..., 0, x_0, x_1] (calloc, then x_0 and x_1 copied to the last two places);
   sum (i + 1) c_i^2 */
static double tail2(const double *x, int n) {
    double *c = calloc((size_t)n, sizeof(double));
    memcpy(c + n - 2, x, 2 * sizeof(double));
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += (i + 1) * c[i] * c[i];
    free(c);
    return r;
}

/* the same with the offset in a variable and a run-time length (n - o = 1 element) */
static double tail1(const double *x, int n) {
    int o = n - 1;
    double *c = calloc((size_t)n, sizeof(double));
    memcpy(c + o, x, (size_t)(n - o) * sizeof(double));
    double r = 0.0;
    for (int i = 0; i < n; i++)
        r += (i + 2) * c[i] * c[i];
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
    /* tail2: r = (n - 1) x_0^2 + n x_1^2 */
    for (int j = 0; j < n; j++)
        want[j] = 0.0;
    want[0] = 2.0 * (n - 1) * x0[0];
    want[1] = 2.0 * n * x0[1];
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)tail2, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int j = 0; j < n; j++) {
        check("tail2 dx", j, dx[j], want[j], TOL);
        fwd += want[j] * t[j];
    }
    check("tail2 forward", 0, __enzyme_fwddiff((void *)tail2, enzyme_dup, x, t, n), fwd, TOL);

    /* tail1: r = (n + 1) x_0^2 */
    for (int i = 0; i < n; i++) { x[i] = x0[i]; dx[i] = 0.0; }
    __enzyme_autodiff((void *)tail1, enzyme_dup, x, dx, n);
    for (int j = 0; j < n; j++)
        check("tail1 dx", j, dx[j], j == 0 ? 2.0 * (n + 1) * x0[0] : 0.0, TOL);
    check("tail1 forward", 0, __enzyme_fwddiff((void *)tail1, enzyme_dup, x, t, n), 2.0 * (n + 1) * x0[0] * t[0],
          TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
