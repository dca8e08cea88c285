/* A pointer that is null plus a constant on one path: LLVM folds `begin + 2` of an empty
   std::vector into `inttoptr (i64 16 to ptr)` (std::vector::emplace at -O3) and joins it
   with real pointers. Like null, such an address has no memory and is its own shadow; it
   was refused as "an address rounded as an integer". Reverse and forward mode against
   closed forms, the pointer chosen from argc so nothing folds. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int i, double got, double want) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= 1e-8 * scale;
    failures += !ok;
    printf("%-4s %-28s [%d] got %-24.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, got, want);
}

/* sum over i < n - 2 of p[i]^2 with p = x + 1 (n > 3 here) */
static double read_shifted(double *x, int n) {
    double *p = n > 3 ? x + 1 : (double *)16;
    double s = 0.0;
    for (int i = 0; i < n - 2; i++)
        s += p[i] * p[i];
    return s;
}

/* buf[i] = x[i]^2 through p, then sum p[i] x[i] = sum x[i]^3 */
static double write_through(double *x, int n) {
    double buf[16];
    double *p = n > 3 ? buf : (double *)16;
    for (int i = 0; i < n; i++)
        p[i] = x[i] * x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += p[i] * x[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 5; /* 6 */
    double x[16], dx[16], t[16];
    for (int i = 0; i < n; i++)
        x[i] = 0.3 + 0.17 * i - 0.05 * i * i;
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)read_shifted, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++)
        check("read, reverse", i, dx[i], i >= 1 && i <= n - 2 ? 2.0 * x[i] : 0.0);
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)write_through, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++)
        check("write, reverse", i, dx[i], 3.0 * x[i] * x[i]);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) t[j] = i == j;
        check("read, forward", i, __enzyme_fwddiff((void *)read_shifted, enzyme_dup, x, t, enzyme_const, n),
              i >= 1 && i <= n - 2 ? 2.0 * x[i] : 0.0);
        check("write, forward", i, __enzyme_fwddiff((void *)write_through, enzyme_dup, x, t, enzyme_const, n),
              3.0 * x[i] * x[i]);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
