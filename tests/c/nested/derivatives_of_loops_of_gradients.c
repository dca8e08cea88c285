// Forward mode over a loop whose body calls a derivative (issue 25 item 1): the inner
// derivative's tape handle (an alloca inlined into the loop, reset to zero at each call)
// has a shadow that must be reset with it, else the second call's tangent tape grows
// from the first call's freed block (a double free, or tangents read from a block the
// primal tape shares). Four cases, each against a closed form:
//   third order, branch   d/dx_k of a Hessian filled by a loop of Hessian-vector products
//                         (forward over reverse) of an f with a branch (its reverse keeps
//                         a taken-edge tape), forward mode over the whole
//   third order, smooth   the same for an f without a branch
//   third order, n run-time  the first, its size from argc (not known to the optimizer)
//   second order          forward mode over a loop of gradient calls (a sum of gradients)
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;

enum { N = 5, MAXN = 16 };

// f_branch(x) = sum_i (x_i > 0 ? 1.7 x_i^3 : x_i^2 sin x_i)
static double f_branch(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        if (x[i] > 0.0) s += 1.7 * x[i] * x[i] * x[i];
        else s += sin(x[i]) * x[i] * x[i];
    }
    return s;
}
static double d2_branch(double x) { return x > 0 ? 6 * 1.7 * x : -x * x * sin(x) + 4 * x * cos(x) + 2 * sin(x); }
static double d3_branch(double x) { return x > 0 ? 6 * 1.7 : -x * x * cos(x) - 6 * x * sin(x) + 6 * cos(x); }

// f_smooth(x) = sum_i x_i^2 sin x_i + 0.3 x_i^4
static double f_smooth(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i] * x[i] + 0.3 * x[i] * x[i] * x[i] * x[i];
    return s;
}
static double d3_smooth(double x) { return -x * x * cos(x) - 6 * x * sin(x) + 6 * cos(x) + 7.2 * x; }

static void grad_branch(const double *x, double *g, int n) {
    for (int i = 0; i < n; i++) g[i] = 0.0;
    __enzyme_autodiff((void *)f_branch, enzyme_dup, x, g, enzyme_const, n);
}
static void grad_smooth(const double *x, double *g, int n) {
    for (int i = 0; i < n; i++) g[i] = 0.0;
    __enzyme_autodiff((void *)f_smooth, enzyme_dup, x, g, enzyme_const, n);
}

// column j of the Hessian: forward over reverse along e_j, one call per column
static void hessian_branch(const double *x, double *h, int n) {
    for (int j = 0; j < n; j++) {
        double e[MAXN] = {0}, g[MAXN];
        e[j] = 1.0;
        __enzyme_fwddiff((void *)grad_branch, enzyme_dup, x, e, enzyme_dupnoneed, g, h + j * n, enzyme_const, n);
    }
}
static void hessian_smooth(const double *x, double *h, int n) {
    for (int j = 0; j < n; j++) {
        double e[MAXN] = {0}, g[MAXN];
        e[j] = 1.0;
        __enzyme_fwddiff((void *)grad_smooth, enzyme_dup, x, e, enzyme_dupnoneed, g, h + j * n, enzyme_const, n);
    }
}

// out = sum_{r<3} (r + 1) grad f_branch(x): its tangent along v is 6 H v
static void weighted_gradients(const double *x, double *out, int n) {
    double g[MAXN];
    for (int i = 0; i < n; i++) out[i] = 0.0;
    for (int r = 0; r < 3; r++) {
        grad_branch(x, g, n);
        for (int i = 0; i < n; i++) out[i] += (r + 1) * g[i];
    }
}

static int failures;
static void check(const char *what, int k, int i, int j, double got, double want) {
    if (!(fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want)))) {
        printf("FAIL %s d/dx%d [%d][%d] = %.17g want %.17g\n", what, k, i, j, got, want);
        failures++;
    }
}

// f is separable: d/dx_k H[i][j] is d3(x_k) when i = j = k, else 0
static void third_order(const char *what, int smooth, const double *x, int n) {
    for (int k = 0; k < n; k++) {
        double dx[MAXN] = {0}, h[MAXN * MAXN], dh[MAXN * MAXN];
        dx[k] = 1.0;
        if (smooth)
            __enzyme_fwddiff((void *)hessian_smooth, enzyme_dup, x, dx, enzyme_dupnoneed, h, dh, enzyme_const, n);
        else
            __enzyme_fwddiff((void *)hessian_branch, enzyme_dup, x, dx, enzyme_dupnoneed, h, dh, enzyme_const, n);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double want = i == j && j == k ? (smooth ? d3_smooth(x[k]) : d3_branch(x[k])) : 0.0;
                check(what, k, i, j, dh[j * n + i], want);
            }
    }
}

int main(int argc, char **argv) {
    (void)argv;
    double x[MAXN] = {0.4, -0.9, 1.3, -0.2, 0.7, -1.1, 0.25, 0.9};
    third_order("third order, branch", 0, x, N);
    third_order("third order, smooth", 1, x, N);
    int n = argc + 6;  // 7 when run without arguments
    third_order("third order, n run-time", 0, x, n);

    double v[N] = {1, -0.5, 0.25, 2, -1}, out[N], dout[N];
    __enzyme_fwddiff((void *)weighted_gradients, enzyme_dup, x, v, enzyme_dupnoneed, out, dout, enzyme_const, N);
    for (int i = 0; i < N; i++) check("second order", -1, i, i, dout[i], 6 * d2_branch(x[i]) * v[i]);

    if (failures) printf("%d failures\n", failures);
    else printf("ok\n");
    return failures != 0;
}
