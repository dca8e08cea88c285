/* The bits of a double copied into a uint64_t with memcpy to test its sign, the double itself used as a float: at -O1 and above LLVM loads the element once as an integer and bitcasts it to a double, so the float value comes from an integer load with other uses (zymase crashed, then lost the derivative); reverse and forward against the closed form. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

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

/* sum over i of -x_i^2 where x_i is negative (sign bit set), x_i^3 elsewhere */
static double signed_powers(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &x[i], sizeof bits);
        s += (bits >> 63) ? -x[i] * x[i] : x[i] * x[i] * x[i];
    }
    return s;
}

static double want_partial(double v) { return v < 0 ? -2.0 * v : 3.0 * v * v; }

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) { x[i] = 0.3 + 0.17 * i - 0.05 * i * i; dx[i] = 0.0; t[i] = 0.0; }
    __enzyme_autodiff((void *)signed_powers, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) check("reverse d/dx_i", x[i], dx[i], want_partial(x[i]), TOL);
    for (int i = 0; i < n; i++) {
        t[i] = 1.0;
        double got = __enzyme_fwddiff((void *)signed_powers, enzyme_dup, x, t, n);
        t[i] = 0.0;
        check("forward d/dx_i", x[i], got, want_partial(x[i]), TOL);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
