// OpenMP (issue 27 item 1): a parallel-for map out[i] = f(x[i]), each iteration writing
// its own element. Reverse and forward mode against the serial twin's derivative and
// central finite differences; an 'if' clause whose serialized path is taken; split mode
// (two in-place maps augmented, then reversed first-in first-out, each with its own tape).
// Run with OMP_NUM_THREADS=1, 2, 4 (tests/test_c_openmp.py).
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

void map_par(const double *x, double *out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

// serialized (clang calls the outlined function directly) when n <= 100
void map_if(const double *x, double *out, int n) {
#pragma omp parallel for if (n > 100)
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

void map_inplace(double *x, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) x[i] = sin(x[i]) * x[i];
}

void map_ser(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

// the loss the finite differences see: sum of out[i] weighted by w[i]
static double loss(const double *x, int n) {
    double out[1000], s = 0;
    map_par(x, out, n);
    for (int i = 0; i < n; i++) s += out[i] * (1.0 + 0.01 * i);
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 997 + argc;  // not a multiple of the team size
    double x[1000], dx[1000] = {0}, dxs[1000] = {0}, out[1000], dout[1000], douts[1000];
    for (int i = 0; i < n; i++) {
        x[i] = 0.003 * i - 1.2;
        dout[i] = douts[i] = 1.0 + 0.01 * i;
    }
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    __enzyme_autodiff((void *)map_par, enzyme_dup, x, dx, enzyme_dupnoneed, out, dout, enzyme_const, n);
    __enzyme_autodiff((void *)map_ser, enzyme_dup, x, dxs, enzyme_dupnoneed, out, douts, enzyme_const, n);
    for (int i = 0; i < n; i++) check("reverse vs serial", i, dx[i], dxs[i], 1e-14);
    for (int i = 0; i < n; i += 97) {
        double h = 1e-6, xp[1000], xm[1000];
        for (int k = 0; k < n; k++) xp[k] = xm[k] = x[k];
        xp[i] += h;
        xm[i] -= h;
        check("reverse vs finite difference", i, dx[i], (loss(xp, n) - loss(xm, n)) / (2 * h), 1e-6);
    }
    // forward: the tangent along t, against the reverse gradient's dot product
    double t[1000], tout[1000] = {0}, touts[1000] = {0};
    for (int i = 0; i < n; i++) t[i] = cos(0.1 * i);
    __enzyme_fwddiff((void *)map_par, enzyme_dup, x, t, enzyme_dup, out, tout, enzyme_const, n);
    __enzyme_fwddiff((void *)map_ser, enzyme_dup, x, t, enzyme_dup, out, touts, enzyme_const, n);
    for (int i = 0; i < n; i++) check("forward vs serial", i, tout[i], touts[i], 1e-14);
    for (int i = 0; i < n; i += 97) check("forward vs reverse", i, tout[i], dxs[i] / (1.0 + 0.01 * i) * t[i], 1e-12);
    // the 'if' clause: parallel for n, serialized for 50
    for (int m = 50; m <= n; m += n - 50) {
        double di[1000] = {0};
        for (int i = 0; i < m; i++) dout[i] = 1.0 + 0.01 * i;
        __enzyme_autodiff((void *)map_if, enzyme_dup, x, di, enzyme_dupnoneed, out, dout, enzyme_const, m);
        for (int i = 0; i < m; i += 7) check(m == 50 ? "if, serialized vs serial" : "if, parallel vs serial", i, di[i], dxs[i], 1e-14);
    }
    // split mode, reversed in the order of the augmented calls
    double y1[1000], y2[1000], g1[1000], g2[1000];
    for (int i = 0; i < n; i++) {
        y1[i] = x[i];
        y2[i] = 0.5 * x[i];
        g1[i] = g2[i] = 1.0;
    }
    void *tape1 = __enzyme_augmentfwd((void *)map_inplace, enzyme_dup, y1, g1, enzyme_const, n);
    void *tape2 = __enzyme_augmentfwd((void *)map_inplace, enzyme_dup, y2, g2, enzyme_const, n);
    __enzyme_reverse((void *)map_inplace, enzyme_dup, y1, g1, enzyme_const, n, tape1);
    __enzyme_reverse((void *)map_inplace, enzyme_dup, y2, g2, enzyme_const, n, tape2);
    for (int i = 0; i < n; i += 7) {
        double a = x[i], b = 0.5 * x[i];
        check("split mode, first call", i, g1[i], cos(a) * a + sin(a), 1e-14);
        check("split mode, second call", i, g2[i], cos(b) * b + sin(b), 1e-14);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
