// OpenMP (issue 27 item 1): 'reduction(+:s)' over a parallel for. In reverse mode the
// adjoint of s reaches every thread's partial sum. Reverse and forward mode against the
// serial twin's derivative and central finite differences; OMP_NUM_THREADS=1, 2, 4.
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

// two reductions in one loop, and a product of the results after it
double energy_par(const double *x, double a, int n) {
    double s = 0, q = 0;
#pragma omp parallel for reduction(+ : s, q)
    for (int i = 0; i < n; i++) {
        s += a * x[i] * x[i];
        q += sin(x[i]);
    }
    return s * q;
}

double energy_ser(const double *x, double a, int n) {
    double s = 0, q = 0;
    for (int i = 0; i < n; i++) {
        s += a * x[i] * x[i];
        q += sin(x[i]);
    }
    return s * q;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 501 + argc;
    double x[512], dx[512] = {0}, dxs[512] = {0}, a = 0.7;
    for (int i = 0; i < n; i++) x[i] = 0.01 * i - 2.0;
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    double da = __enzyme_autodiff((void *)energy_par, enzyme_dup, x, dx, a, enzyme_const, n);
    double das = __enzyme_autodiff((void *)energy_ser, enzyme_dup, x, dxs, a, enzyme_const, n);
    check("reverse d/da vs serial", 0, da, das, 1e-12);
    for (int i = 0; i < n; i++) check("reverse vs serial", i, dx[i], dxs[i], 1e-12);
    double h = 1e-6;
    check("reverse d/da vs finite difference", 0, da,
          (energy_par(x, a + h, n) - energy_par(x, a - h, n)) / (2 * h), 1e-6);
    for (int i = 0; i < n; i += 50) {
        double xp[512], xm[512];
        for (int k = 0; k < n; k++) xp[k] = xm[k] = x[k];
        xp[i] += h;
        xm[i] -= h;
        check("reverse vs finite difference", i, dx[i], (energy_par(xp, a, n) - energy_par(xm, a, n)) / (2 * h), 1e-6);
    }
    // forward: the directional derivative along (t, ta) is the gradient's dot product
    double t[512], ta = 0.3, want = das * ta;
    for (int i = 0; i < n; i++) {
        t[i] = cos(0.37 * i);
        want += dxs[i] * t[i];
    }
    double got = __enzyme_fwddiff((void *)energy_par, enzyme_dup, x, t, a, ta, enzyme_const, n);
    check("forward vs gradient", 0, got, want, 1e-12);
    printf("%d failures\n", failures);
    return failures != 0;
}
