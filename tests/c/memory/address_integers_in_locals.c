/* Addresses of the differentiated array kept as integers in local variables (uintptr_t): compared, subtracted into a length, tested for alignment, never made pointers again. */
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

#define TOL 1e-8

/* sum of w_i x_i^2 / len: w_i is 2 before the middle address and 1 after it; len is the
   distance of the end from the start in doubles. Without optimization before AD (-O0, or
   --no-preopt, where the locals carry lifetime markers at -O1 and up) every integer lives in
   a stack slot and is read back from it. */
static double weighted(const double *x, int n) {
    uintptr_t begin = (uintptr_t)x;
    uintptr_t end = (uintptr_t)(x + n);
    uintptr_t mid = begin + (end - begin) / 2;
    double len = (double)((end - begin) / sizeof(double));
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        uintptr_t here = (uintptr_t)&x[i];
        s += (here < mid ? 2.0 : 1.0) * x[i] * x[i];
    }
    if (begin % sizeof(double) == 0)
        s *= 1.5;                  /* doubles are aligned: always taken */
    if (end != begin)
        s /= len;
    return s;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7, known only at run time */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.4 + 0.3 * i - 0.04 * i * i;
        t[i] = 0.2 - 0.07 * i;
    }
    /* &x[i] is before the middle address when 2 i < n */

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)weighted, enzyme_dup, x, dx, enzyme_const, n);
    double tangent = 0.0;
    for (int i = 0; i < n; i++) {
        double want = 1.5 * 2.0 * (2 * i < n ? 2.0 : 1.0) * x[i] / n;
        check("weighted dx", i, dx[i], want, TOL);
        tangent += want * t[i];
    }
    check("weighted forward", 0, __enzyme_fwddiff((void *)weighted, enzyme_dup, x, t, enzyme_const, n), tangent, TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
