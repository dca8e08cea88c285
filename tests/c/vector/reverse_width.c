// Vector reverse mode (issue 25 item 2): __enzyme_autodiff with enzyme_width, N: N
// cotangents in one sweep with one tape. Each lane is checked against a separate
// scalar __enzyme_autodiff call with the same seeds, and against closed forms, at
// widths 1, 2, 3 and 4: shadows given one by one (enzyme_dup) and as a strided buffer
// (enzyme_dupv), an active float argument whose derivative comes back once per lane,
// an active result seeded 1 in every lane, a called helper (reversed as one width-N
// call), loops whose values go on the tape, a branch, pointers swapped in a loop
// (shadow phis per lane). The Jacobian of a 10-point
// stencil is built row by row in chunks of 4 rows and a last chunk of 2 (4 does not
// divide 10).
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_const, enzyme_dup, enzyme_dupnoneed, enzyme_width, enzyme_dupv, enzyme_dupnoneedv;
extern double __enzyme_autodiff(void *, ...);
extern void __enzyme_autodiffv(void *, ...);
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { double da[2], db[2]; } two_by_2;
extern vec2 __enzyme_autodiff2(void *, ...);
extern vec3 __enzyme_autodiff3(void *, ...);
extern two_by_2 __enzyme_autodiff22(void *, ...);

static int failures = 0;

static void check(const char *what, int lane, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s lane %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, lane, got, want);
}

#define N 10

__attribute__((noinline)) static double bump(double v, double a) { return v > 0 ? a * v * v : a * sin(v); }

// out[i] from a nonlinear stencil of x (through the helper), returns a * sum(out)
static double model(double a, const double *x, double *out, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double right = i + 1 < n ? x[i + 1] : 0;
        out[i] = bump(x[i], a) * right + x[i];
        s += out[i];
    }
    return a * s;
}

static void stencil(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) {
        double left = i > 0 ? x[i - 1] : 0, right = i + 1 < n ? x[i + 1] : 0;
        out[i] = left - 2 * x[i] + right + x[i] * x[i] * right;
    }
}

static double stencil_partial(const double *x, int i, int j, int n) {  // d out[i] / d x[j]
    double right = i + 1 < n ? x[i + 1] : 0, r = 0;
    if (j == i - 1) r += 1;
    if (j == i) r += -2 + 2 * x[i] * right;
    if (j == i + 1) r += 1 + x[i] * x[i];
    return r;
}

static double h(double a, double b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += bump(a + 0.1 * i, b) * b;
    return s;
}

static void scalars(int n) {
    double a = 0.4 + 0.01 * n, b = -1.3;
    double da = __enzyme_autodiff((void *)h, a, enzyme_const, b, enzyme_const, n);
    double db = __enzyme_autodiff((void *)h, enzyme_const, a, b, enzyme_const, n);
    double want_a = 0, want_b = 0;
    for (int i = 0; i < n; i++) {
        double v = a + 0.1 * i;
        want_a += (v > 0 ? 2 * b * v : b * cos(v)) * b;
        want_b += 2 * (v > 0 ? b * v * v : b * sin(v));
    }
    check("h scalar da vs closed form", 0, da, want_a, 1e-12);
    check("h scalar db vs closed form", 0, db, want_b, 1e-12);
    double w1 = __enzyme_autodiff((void *)h, enzyme_width, 1, a, enzyme_const, b, enzyme_const, n);
    check("h width 1", 0, w1, da, 1e-12);
    vec2 w2 = __enzyme_autodiff2((void *)h, enzyme_width, 2, a, enzyme_const, b, enzyme_const, n);
    for (int k = 0; k < 2; k++) check("h width 2 (seed 1 in each lane)", k, w2.d[k], da, 1e-12);
    two_by_2 w22 = __enzyme_autodiff22((void *)h, enzyme_width, 2, a, b, enzyme_const, n);
    for (int k = 0; k < 2; k++) {
        check("h width 2 da", k, w22.da[k], da, 1e-12);
        check("h width 2 db", k, w22.db[k], db, 1e-12);
    }
}

static void model_lanes(int n) {
    double a = 0.8, x[N], out[N];
    for (int i = 0; i < n; i++) x[i] = 0.25 * i - 1.0;
    // three lanes: different seeds on out's shadow, the result seeded 1 in each
    double dx[3][N], dout[3][N], want_dx[3][N], want_da[3];
    for (int k = 0; k < 3; k++) {
        double seed[N], d[N] = {0};
        for (int i = 0; i < n; i++) seed[i] = cos(1.0 + k + 0.5 * i);
        want_da[k] = __enzyme_autodiff((void *)model, a, enzyme_dup, x, d, enzyme_dup, out, seed, enzyme_const, n);
        memcpy(want_dx[k], d, sizeof d);
        for (int i = 0; i < n; i++) dout[k][i] = cos(1.0 + k + 0.5 * i), dx[k][i] = 0;
    }
    vec3 da = __enzyme_autodiff3((void *)model, enzyme_width, 3, a, enzyme_dupv, (long)sizeof(dx[0]), x, dx,
                                 enzyme_dupv, (long)sizeof(dout[0]), out, dout, enzyme_const, n);
    for (int k = 0; k < 3; k++) {
        check("model width 3 da", k, da.d[k], want_da[k], 1e-12);
        for (int i = 0; i < n; i++) check("model width 3 dx", k * N + i, dx[k][i], want_dx[k][i], 1e-12);
    }
}

// Jacobian rows of the stencil: lane k seeds out's shadow with row r + k of the identity
#define JAC_ROWS(W)                                                                                         \
    static void rows_width##W(const double *x, double jac[N][N], int n, int r) {                            \
        double out[N], seeds[W][N] = {{0}}, dxs[W][N] = {{0}};                                              \
        for (int k = 0; k < W; k++) seeds[k][r + k] = 1;                                                    \
        __enzyme_autodiffv((void *)stencil, enzyme_width, W, enzyme_dupv, (long)sizeof(dxs[0]), x, dxs,     \
                           enzyme_dupnoneedv, (long)sizeof(seeds[0]), out, seeds, enzyme_const, n);        \
        for (int k = 0; k < W; k++)                                                                         \
            for (int j = 0; j < n; j++) jac[r + k][j] = dxs[k][j];                                          \
    }
JAC_ROWS(1)
JAC_ROWS(2)
JAC_ROWS(4)

static void stencil_rows(int n) {
    double x[N], jac[N][N], jac1[N][N];
    for (int i = 0; i < n; i++) x[i] = 0.3 * i - 1.1;
    int r = 0;
    for (; r + 4 <= n; r += 4) rows_width4(x, jac, n, r);
    for (; r + 2 <= n; r += 2) rows_width2(x, jac, n, r);
    for (r = 0; r < n; r++) rows_width1(x, jac1, n, r);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            check("stencil rows width 4+2", i * N + j, jac[i][j], stencil_partial(x, i, j, n), 1e-12);
            check("stencil rows width 1", i * N + j, jac1[i][j], stencil_partial(x, i, j, n), 1e-12);
        }
    // enzyme_dup at width 2: separate shadow pointers, lanes 0 and 1
    double out[N], s0[N] = {0}, s1[N] = {0}, d0[N] = {0}, d1[N] = {0};
    s0[2] = 1, s1[6] = 1;
    __enzyme_autodiffv((void *)stencil, enzyme_width, 2, enzyme_dup, x, d0, d1, enzyme_dup, out, s0, s1,
                       enzyme_const, n);
    for (int j = 0; j < n; j++) {
        check("stencil dup width 2 lane 0", j, d0[j], stencil_partial(x, 2, j, n), 1e-12);
        check("stencil dup width 2 lane 1", j, d1[j], stencil_partial(x, 6, j, n), 1e-12);
    }
}

// explicit heat steps swapping two buffers: pointer phis, whose shadows are block
// arguments once per lane
static void heat(double *u, double *tmp, int n, int steps) {
    double *a = u, *b = tmp;
    for (int s = 0; s < steps; s++) {
        for (int i = 1; i + 1 < n; i++) b[i] = a[i] + 0.1 * (a[i - 1] - 2 * a[i] + a[i + 1]) + 0.01 * a[i] * a[i];
        b[0] = a[0], b[n - 1] = a[n - 1];
        double *t = a;
        a = b, b = t;
    }
    if (a != u)
        for (int i = 0; i < n; i++) u[i] = a[i];
}

static void heat_lanes(int n, int steps) {
    double u0[N], u[N], tmp[N], want[2][N], du[2][N], dtmp[2][N];
    for (int i = 0; i < n; i++) u0[i] = sin(0.7 * i);
    for (int k = 0; k < 2; k++) {  // separate scalar calls: seed u's shadow with row 3 + 4k
        double d[N] = {0}, dt[N] = {0};
        d[3 + 4 * k] = 1;
        memcpy(u, u0, sizeof u);
        __enzyme_autodiffv((void *)heat, enzyme_dup, u, d, enzyme_dup, tmp, dt, enzyme_const, n, enzyme_const, steps);
        memcpy(want[k], d, sizeof d);
        memset(du[k], 0, sizeof du[k]);
        memset(dtmp[k], 0, sizeof dtmp[k]);
        du[k][3 + 4 * k] = 1;
    }
    memcpy(u, u0, sizeof u);
    __enzyme_autodiffv((void *)heat, enzyme_width, 2, enzyme_dupv, (long)sizeof(du[0]), u, du, enzyme_dupv,
                       (long)sizeof(dtmp[0]), tmp, dtmp, enzyme_const, n, enzyme_const, steps);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) check("heat width 2 vs scalar calls", k * N + i, du[k][i], want[k][i], 1e-12);
}

int main(int argc, char **argv) {
    (void)argv;
    scalars(argc + 3);
    model_lanes(N + argc - 1);
    stencil_rows(N + argc - 1);
    heat_lanes(N + argc - 1, 4 + argc);
    printf("%d failures\n", failures);
    return failures != 0;
}
