// OpenMP (issue 27 item 1): schedules and thread-dependent code. A chunked static
// schedule (each thread several chunks) in reverse mode, a dynamic schedule in forward
// mode (reverse refuses it), and per-thread partial sums indexed by omp_get_thread_num()
// combined after the region. Against the serial twins' derivatives and central finite
// differences; OMP_NUM_THREADS=1, 2, 4.
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { N = 203, MAX_THREADS = 64 };

void chunked_par(const double *x, double *out, int n) {
#pragma omp parallel for schedule(static, 3)
    for (int i = 1; i < n - 1; i++) out[i] = sin(x[i]) * x[i + 1] - x[i - 1] * x[i];
}

void dynamic_par(const double *x, double *out, int n) {
#pragma omp parallel for schedule(dynamic, 2)
    for (int i = 1; i < n - 1; i++) out[i] = sin(x[i]) * x[i + 1] - x[i - 1] * x[i];
}

void stencil_ser(const double *x, double *out, int n) {
    for (int i = 1; i < n - 1; i++) out[i] = sin(x[i]) * x[i + 1] - x[i - 1] * x[i];
}

// partial sums per thread, summed after the region
double partial_par(const double *x, int n) {
    double part[MAX_THREADS] = {0}, s = 0;
#pragma omp parallel
    {
        int t = omp_get_thread_num();
#pragma omp for
        for (int i = 0; i < n; i++) part[t] += exp(0.1 * x[i]) * x[i];
    }
    for (int t = 0; t < MAX_THREADS; t++) s += part[t];
    return s * s;
}

double partial_ser(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(0.1 * x[i]) * x[i];
    return s * s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 2 + argc;
    double x[N], dx[N], dxs[N], out[N], dout[N], douts[N], h = 1e-6;
    for (int i = 0; i < n; i++) x[i] = 0.02 * i - 1.5;
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    for (int i = 0; i < n; i++) {
        dx[i] = dxs[i] = 0;
        dout[i] = douts[i] = cos(0.1 * i);
    }
    __enzyme_autodiff((void *)chunked_par, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout, enzyme_const, n);
    __enzyme_autodiff((void *)stencil_ser, enzyme_dup, x, dxs, enzyme_dupnoneed, out, douts, enzyme_const, n);
    for (int i = 0; i < n; i++) check("static chunked: reverse vs serial", i, dx[i], dxs[i], 1e-12);

    double t[N], tout[N] = {0}, touts[N] = {0};
    for (int i = 0; i < n; i++) t[i] = sin(0.3 * i);
    __enzyme_fwddiff((void *)dynamic_par, enzyme_dup, x, t, enzyme_dup, out, tout, enzyme_const, n);
    __enzyme_fwddiff((void *)stencil_ser, enzyme_dup, x, t, enzyme_dup, out, touts, enzyme_const, n);
    for (int i = 1; i < n - 1; i++) check("dynamic: forward vs serial", i, tout[i], touts[i], 1e-14);

    for (int i = 0; i < n; i++) dx[i] = dxs[i] = 0;
    __enzyme_autodiff((void *)partial_par, enzyme_dup, x, dx, enzyme_const, n);
    __enzyme_autodiff((void *)partial_ser, enzyme_dup, x, dxs, enzyme_const, n);
    for (int i = 0; i < n; i++) check("per-thread partial sums: reverse vs serial", i, dx[i], dxs[i], 1e-12);
    for (int i = 0; i < n; i += 29) {
        double xp[N], xm[N];
        for (int k = 0; k < n; k++) xp[k] = xm[k] = x[k];
        xp[i] += h;
        xm[i] -= h;
        check("per-thread partial sums: reverse vs finite difference", i, dx[i],
              (partial_par(xp, n) - partial_par(xm, n)) / (2 * h), 1e-6);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
