// Parallel regions that read an enzyme_const array (session 32): clang passes the region
// the address of a local variable holding the pointer; that variable got a shadow holding
// null, and the region's derivative read the tangent or adjoint of x[i] through it (a
// segfault in both modes at every level). Also __enzyme_autodiff called by every thread of
// a region (at -O0 the link failed: two unnamed OpenMP globals were joined as one).
// Reverse and forward mode against closed forms. Run with OMP_NUM_THREADS=1, 2, 4
// (tests/test_c_openmp.py).
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern double __enzyme_autodiff_d(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok)
        failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

// y[i] = x[i] * a^2 + sin(a): x constant, a active through a pointer
static void scaled(const double *x, double *y, const double *a, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++)
        y[i] = x[i] * *a * *a + sin(*a);
}

static double g(double x, double a) { return sin(x * a) * x; }

int main(int argc, char **argv) {
    (void)argv;
    enum { SZ = 200 };
    int n = SZ - 3 + argc;
    double x[SZ], y[SZ], dy[SZ], ty[SZ], a = 0.7, da = 0, ta = 1.0, sx = 0;
    for (int i = 0; i < n; i++) {
        x[i] = 0.01 * i - 1;
        dy[i] = 1;
        sx += x[i];
    }
    __enzyme_autodiff((void *)scaled, enzyme_const, x, enzyme_dupnoneed, y, dy, enzyme_dup, &a, &da, enzyme_const, n);
    check("reverse d/da", n, da, 2 * a * sx + n * cos(a), 1e-12);
    __enzyme_fwddiff((void *)scaled, enzyme_const, x, enzyme_dup, y, ty, enzyme_dup, &a, &ta, enzyme_const, n);
    for (int i = 0; i < n; i += 17)
        check("forward d/da", i, ty[i], 2 * a * x[i] + cos(a), 1e-12);

    double grads[SZ];
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
#pragma omp for
        for (int i = 0; i < n; i++)
            grads[i] = __enzyme_autodiff_d((void *)g, x[i], enzyme_const, 1.5);
    }
    printf("threads %d\n", team);
    for (int i = 0; i < n; i += 13)
        check("autodiff in a region", i, grads[i], cos(1.5 * x[i]) * 1.5 * x[i] + sin(1.5 * x[i]), 1e-12);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
