// OpenMP parallel regions in vector mode (issue 25 item 2): one region differentiates
// every lane. Forward mode forks the region's width-N forward derivative (N tangents
// next to each primal value, in the same worksharing loop); reverse mode recomputes a
// region it can recompute with the region's width-N combined derivative, as at width 1,
// and otherwise forks its width-N augmented and reverse functions (one tape per thread
// for all lanes). A stencil scattering into its neighbours (atomic adjoint adds), a
// reduction, an in-place map (taped), and split mode at width 2. Each lane against a
// width-1 call with that lane's seeds or tangents and against closed forms, at widths 2
// and 3; OMP_NUM_THREADS=1, 2, 4.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_autodiffd(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
extern vec2 __enzyme_autodiff2(void *, ...);
extern vec3 __enzyme_autodiff3(void *, ...);
extern vec3 __enzyme_fwddiff3(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed, enzyme_dupv, enzyme_dupnoneedv, enzyme_width;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

#define N 400
#define W 3

// out[i] = sin(x[i]) x[i] + a x[i-1] x[i+1] (a stencil: x's adjoint gets neighbours' adds)
void stencil_par(const double *x, double *out, double a, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
        double left = i > 0 ? x[i - 1] : 0, right = i + 1 < n ? x[i + 1] : 0;
        out[i] = sin(x[i]) * x[i] + a * left * right;
    }
}

// the partial of out[i] with respect to x[j]
static double partial(const double *x, double a, int i, int j, int n) {
    double left = i > 0 ? x[i - 1] : 0, right = i + 1 < n ? x[i + 1] : 0, r = 0;
    if (j == i) r += cos(x[i]) * x[i] + sin(x[i]);
    if (j == i - 1) r += a * right;
    if (j == i + 1) r += a * left;
    return r;
}

// a reduction over a parallel for, returning a float: active a
double energy_par(const double *x, double a, int n) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++) s += a * x[i] * x[i] + sin(a * x[i]);
    return s;
}

void scale_inplace(double *x, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) x[i] = sin(x[i]) * x[i];
}

// in place, then a sum of squares: the region reads and writes x, so reverse mode cannot
// recompute it and takes its taped split pair
double inplace_sum(double *x, int n) {
    scale_inplace(x, n);
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

static double seed(int k, int i) { return cos(0.01 * i + k) + 0.5 * k; }

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 2 + argc;  // not a multiple of the team size
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);
    double x[N], out[N], a = 0.7;
    for (int i = 0; i < n; i++) x[i] = 0.004 * i - 0.8;

    // reverse, width 3: out's shadow seeded per lane (enzyme_dupnoneedv), a active
    static double dx[W][N], dout[W][N];
    for (int k = 0; k < W; k++)
        for (int i = 0; i < n; i++) dx[k][i] = 0, dout[k][i] = seed(k, i);
    vec3 da = __enzyme_autodiff3((void *)stencil_par, enzyme_width, W, enzyme_dupv, (long)sizeof(dx[0]), x, dx,
                                 enzyme_dupnoneedv, (long)sizeof(dout[0]), out, dout, a, enzyme_const, n);
    for (int k = 0; k < W; k++) {
        double d1[N] = {0}, s1[N], want_da = 0;
        for (int i = 0; i < n; i++) s1[i] = seed(k, i);
        double da1 = __enzyme_autodiffd((void *)stencil_par, enzyme_dup, x, d1, enzyme_dupnoneed, out, s1, a,
                                        enzyme_const, n);
        for (int i = 0; i < n; i++) want_da += seed(k, i) * (i > 0 && i + 1 < n ? x[i - 1] * x[i + 1] : 0);
        check("stencil reverse width 3 da vs width 1", k, da.d[k], da1, 1e-12);
        check("stencil reverse width 3 da vs closed form", k, da.d[k], want_da, 1e-10);
        for (int j = 0; j < n; j++) {
            double want = 0;
            for (int i = j - 1; i <= j + 1; i++)
                if (i >= 0 && i < n) want += seed(k, i) * partial(x, a, i, j, n);
            check("stencil reverse width 3 dx vs width 1", k * N + j, dx[k][j], d1[j], 1e-12);
            check("stencil reverse width 3 dx vs closed form", k * N + j, dx[k][j], want, 1e-10);
        }
    }

    // forward, width 3: tangents of x per lane, a's tangent per lane
    static double tx[W][N], tout[W][N];
    for (int k = 0; k < W; k++)
        for (int i = 0; i < n; i++) tx[k][i] = seed(k + 3, i), tout[k][i] = 0;
    __enzyme_fwddiff3((void *)stencil_par, enzyme_width, W, enzyme_dupv, (long)sizeof(tx[0]), x, tx,
                      enzyme_dupnoneedv, (long)sizeof(tout[0]), out, tout, a, 0.5, -1.0, 2.0, enzyme_const, n);
    double ta[W] = {0.5, -1.0, 2.0};
    for (int k = 0; k < W; k++) {
        double t1[N], o1[N] = {0};
        for (int i = 0; i < n; i++) t1[i] = seed(k + 3, i);
        __enzyme_fwddiff((void *)stencil_par, enzyme_dup, x, t1, enzyme_dupnoneed, out, o1, a, ta[k],
                         enzyme_const, n);
        for (int i = 0; i < n; i++) {
            double left = i > 0 ? x[i - 1] : 0, right = i + 1 < n ? x[i + 1] : 0, want = ta[k] * left * right;
            for (int j = i - 1; j <= i + 1; j++)
                if (j >= 0 && j < n) want += partial(x, a, i, j, n) * seed(k + 3, j);
            check("stencil forward width 3 vs width 1", k * N + i, tout[k][i], o1[i], 1e-12);
            check("stencil forward width 3 vs closed form", k * N + i, tout[k][i], want, 1e-10);
        }
    }

    // a reduction, reverse at width 2: the result seeded 1 in each lane
    static double ex[2][N];
    memset(ex, 0, sizeof ex);
    vec2 ea = __enzyme_autodiff2((void *)energy_par, enzyme_width, 2, enzyme_dupv, (long)sizeof(ex[0]), x, ex, a,
                                 enzyme_const, n);
    double e1[N] = {0}, want_ea = 0;
    double ea1 = __enzyme_autodiffd((void *)energy_par, enzyme_dup, x, e1, a, enzyme_const, n);
    for (int i = 0; i < n; i++) want_ea += x[i] * x[i] + x[i] * cos(a * x[i]);
    for (int k = 0; k < 2; k++) {
        check("reduction reverse width 2 da vs width 1", k, ea.d[k], ea1, 1e-12);
        check("reduction reverse width 2 da vs closed form", k, ea.d[k], want_ea, 1e-10);
        for (int i = 0; i < n; i++) {
            check("reduction reverse width 2 dx vs width 1", k * N + i, ex[k][i], e1[i], 1e-12);
            check("reduction reverse width 2 dx vs closed form", k * N + i, ex[k][i],
                  2 * a * x[i] + a * cos(a * x[i]), 1e-10);
        }
    }

    // split mode at width 2: x in place, two lanes of seeds, one tape
    static double y[N], g[2][N];
    for (int i = 0; i < n; i++) y[i] = x[i], g[0][i] = seed(0, i), g[1][i] = seed(1, i);
    void *tape = __enzyme_augmentfwd((void *)scale_inplace, enzyme_width, 2, enzyme_dupv, (long)sizeof(g[0]), y, g,
                                     enzyme_const, n);
    for (int i = 0; i < n; i++) check("split width 2 primal", i, y[i], sin(x[i]) * x[i], 1e-14);
    __enzyme_reverse((void *)scale_inplace, enzyme_width, 2, enzyme_dupv, (long)sizeof(g[0]), y, g, enzyme_const, n,
                     tape);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++)
            check("split width 2 vs closed form", k * N + i, g[k][i], seed(k, i) * (cos(x[i]) * x[i] + sin(x[i])),
                  1e-12);
    // the taped region in reverse mode at width 3: x's shadows seeded per lane, the
    // result 1 in each lane
    static double z[N], gz[W][N];
    for (int i = 0; i < n; i++) {
        z[i] = x[i];
        for (int k = 0; k < W; k++) gz[k][i] = seed(k, i);
    }
    __enzyme_autodiff((void *)inplace_sum, enzyme_width, W, enzyme_dupv, (long)sizeof(gz[0]), z, gz, enzyme_const, n);
    for (int k = 0; k < W; k++) {
        double z1[N], g1[N];
        for (int i = 0; i < n; i++) z1[i] = x[i], g1[i] = seed(k, i);
        __enzyme_autodiff((void *)inplace_sum, enzyme_dup, z1, g1, enzyme_const, n);
        for (int i = 0; i < n; i++) {
            double u = sin(x[i]) * x[i], du = cos(x[i]) * x[i] + sin(x[i]);
            check("taped region reverse width 3 vs width 1", k * N + i, gz[k][i], g1[i], 1e-12);
            check("taped region reverse width 3 vs closed form", k * N + i, gz[k][i], (2 * u + seed(k, i)) * du,
                  1e-12);
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
