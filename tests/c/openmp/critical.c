// OpenMP (issue 27 item 1): a 'critical' section accumulating into a shared scalar, and a
// parallel region of two worksharing loops separated by their implicit barrier, then a
// 'single' section. In reverse mode the critical section and the barrier are mirrored.
// Reverse and forward mode against the serial twins' derivatives and central finite
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

enum { N = 300 };

void accumulate_par(const double *x, double *total, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
        double v = sin(x[i]) * x[i];
#pragma omp critical
        {
            *total += v * v + 0.5 * v;
        }
    }
}

void accumulate_ser(const double *x, double *total, int n) {
    for (int i = 0; i < n; i++) {
        double v = sin(x[i]) * x[i];
        *total += v * v + 0.5 * v;
    }
}

void phases_par(const double *x, double *tmp, double *out, double *first, int n) {
#pragma omp parallel
    {
#pragma omp for
        for (int i = 0; i < n; i++) tmp[i] = sin(x[i]);
        // (the implicit barrier: out[i] reads tmp[i-1], another thread's)
#pragma omp for
        for (int i = 1; i < n; i++) out[i] = tmp[i - 1] * tmp[i];
#pragma omp single
        *first = 2 * tmp[0];
    }
}

void phases_ser(const double *x, double *tmp, double *out, double *first, int n) {
    for (int i = 0; i < n; i++) tmp[i] = sin(x[i]);
    for (int i = 1; i < n; i++) out[i] = tmp[i - 1] * tmp[i];
    *first = 2 * tmp[0];
}

static double accumulate_loss(const double *x, int n) {
    double total = 1.0;
    accumulate_par(x, &total, n);
    return total;
}

static double phases_loss(const double *x, int n) {
    double tmp[N], out[N], first, s = 0;
    phases_par(x, tmp, out, &first, n);
    for (int i = 1; i < n; i++) s += out[i] * (1 + 0.01 * i);
    return s + 3 * first;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 2 + argc;
    double x[N], dx[N] = {0}, dxs[N] = {0}, h = 1e-6;
    for (int i = 0; i < n; i++) x[i] = 0.01 * i - 1.0;
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    double total = 1.0, dtotal = 1.0, totals = 1.0, dtotals = 1.0;
    __enzyme_autodiff((void *)accumulate_par, enzyme_dup, x, dx, enzyme_dup, &total, &dtotal, enzyme_const, n);
    __enzyme_autodiff((void *)accumulate_ser, enzyme_dup, x, dxs, enzyme_dup, &totals, &dtotals, enzyme_const, n);
    check("critical: adjoint of the total kept", 0, dtotal, 1.0, 1e-15);
    for (int i = 0; i < n; i++) check("critical: reverse vs serial", i, dx[i], dxs[i], 1e-12);
    for (int i = 0; i < n; i += 37) {
        double xp[N], xm[N];
        for (int k = 0; k < n; k++) xp[k] = xm[k] = x[k];
        xp[i] += h;
        xm[i] -= h;
        check("critical: reverse vs finite difference", i, dx[i],
              (accumulate_loss(xp, n) - accumulate_loss(xm, n)) / (2 * h), 1e-6);
    }
    double t[N], want = 0, tt = 0;
    for (int i = 0; i < n; i++) {
        t[i] = cos(0.3 * i);
        want += dxs[i] * t[i];
    }
    total = 1.0;
    __enzyme_fwddiff((void *)accumulate_par, enzyme_dup, x, t, enzyme_dup, &total, &tt, enzyme_const, n);
    check("critical: forward vs gradient", 0, tt, want, 1e-12);

    double tmp[N], dtmp[N] = {0}, out[N], dout[N], first, dfirst = 3, douts[N], dfirsts = 3;
    for (int i = 0; i < n; i++) {
        dx[i] = dxs[i] = 0;
        dout[i] = douts[i] = 1 + 0.01 * i;
    }
    __enzyme_autodiff((void *)phases_par, enzyme_dup, x, dx, enzyme_dup, tmp, dtmp, enzyme_dup, out, dout, enzyme_dup,
                      &first, &dfirst, enzyme_const, n);
    for (int i = 0; i < n; i++) dtmp[i] = 0;
    __enzyme_autodiff((void *)phases_ser, enzyme_dup, x, dxs, enzyme_dup, tmp, dtmp, enzyme_dup, out, douts, enzyme_dup,
                      &first, &dfirsts, enzyme_const, n);
    for (int i = 0; i < n; i++) check("barrier: reverse vs serial", i, dx[i], dxs[i], 1e-12);
    for (int i = 0; i < n; i += 37) {
        double xp[N], xm[N];
        for (int k = 0; k < n; k++) xp[k] = xm[k] = x[k];
        xp[i] += h;
        xm[i] -= h;
        check("barrier: reverse vs finite difference", i, dx[i], (phases_loss(xp, n) - phases_loss(xm, n)) / (2 * h),
              1e-6);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
