/* Temporaries from C11 aligned_alloc (alignment, size): their shadows are aligned and zeroed like the primal's, the size taken from the second argument (refused before: "no shadow"); a time loop swapping two 64-byte-aligned buffers; reverse and forward against the closed form. */
#include <stdio.h>
#include <stdlib.h>
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

/* u <- 0.5 u + 0.25 u^2 three times (elementwise, through two aligned buffers), then sum w_i u_i */
static double aligned_steps(const double *x, int n) {
    size_t bytes = 64 * ((n * sizeof(double) + 63) / 64);
    double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes);
    for (int i = 0; i < n; i++) a[i] = x[i];
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < n; i++) b[i] = 0.5 * a[i] + 0.25 * a[i] * a[i];
        double *tmp = a; a = b; b = tmp;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++) s += (i + 1) * a[i];
    free(a);
    free(b);
    return s;
}

/* d/dx of the three steps, by the chain rule on one element */
static double want_partial(double v, int i) {
    double d = 1.0;
    for (int t = 0; t < 3; t++) {
        d *= 0.5 + 0.5 * v;
        v = 0.5 * v + 0.25 * v * v;
    }
    return (i + 1) * d;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 10; /* 11 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) { x[i] = 0.9 * sin(0.7 * i + 0.2); dx[i] = 0.0; t[i] = 0.0; }
    __enzyme_autodiff((void *)aligned_steps, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++) check("reverse d/dx_i", x[i], dx[i], want_partial(x[i], i), TOL);
    for (int i = 0; i < n; i++) {
        t[i] = 1.0;
        double got = __enzyme_fwddiff((void *)aligned_steps, enzyme_dup, x, t, n);
        t[i] = 0.0;
        check("forward d/dx_i", x[i], got, want_partial(x[i], i), TOL);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
