/* A helper with a stack array of its own, called (through pointers, so zymase inlines it
   before differentiating) in a loop of a million iterations. The helper's array must be
   allocated once, in the caller's entry block: left at the call site, inside the loop, it
   becomes a dynamic alloca that takes new stack space on every iteration and overflows the
   default 8 MiB stack (24 bytes a million times, and more in the derivative).
   Expected values in closed form:
     f(a, x)  = sum_k (a0 x_k + a1 x_k^2 + a2 x_k^3)^2 / 2   over x_k = k / n (k < n)
     df/da_j  = sum_k r_k x_k^(j+1),  r_k = a0 x_k + a1 x_k^2 + a2 x_k^3 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-8s[%d] got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

/* the cubic's value at x, through a small table of powers on the stack */
static double cubic(const double *a, double x) {
    double pw[3];
    pw[0] = x;
    pw[1] = x * x;
    pw[2] = pw[1] * x;
    double r = 0.0;
    for (int j = 0; j < 3; j++) r += a[j] * pw[j];
    return r;
}

__attribute__((noinline)) static double f(const double *a, int n) {
    double s = 0.0;
    for (int k = 0; k < n; k++) {
        double r = cubic(a, (double)k / n);
        s += 0.5 * r * r;
    }
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 1000000 * argc; /* a million when run without arguments */
    double a[3] = {0.5, -0.25, 0.125}, da[3] = {0, 0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, a, da, enzyme_const, n);
    double want[3] = {0, 0, 0};
    for (int k = 0; k < n; k++) {
        double x = (double)k / n, r = a[0] * x + a[1] * x * x + a[2] * x * x * x;
        want[0] += r * x;
        want[1] += r * x * x;
        want[2] += r * x * x * x;
    }
    for (int j = 0; j < 3; j++) check("da", j, da[j], want[j], 1e-9);
    printf("%d failures\n", failures);
    return failures != 0;
}
