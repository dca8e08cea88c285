// Vector forward mode (issue 25 item 2): __enzyme_fwddiff with enzyme_width, N.
// Every N-wide call is checked lane by lane against N separate scalar calls
// (__enzyme_fwddiff without enzyme_width) and against closed forms, at widths 1, 2,
// 3, 4 and 8: float arguments with N tangents, enzyme_dup pointers with N shadows,
// enzyme_dupv / enzyme_dupnoneedv buffers of N shadows `stride` bytes apart, the
// result's N tangents in a struct (and after the primal with enzyme_primal_return),
// calls, branches, loops, a local array, pointers swapped in a loop (shadow phis
// per lane). The Jacobian of a 10-point stencil is
// built in chunks of 4 columns and a last chunk of 2 (4 does not divide 10). Chains of
// scalar ops whose tangents the lanes form from shared partials (combos below).
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_const, enzyme_dup, enzyme_dupnoneed, enzyme_width, enzyme_dupv, enzyme_dupnoneedv,
    enzyme_primal_return;
extern double __enzyme_fwddiff(void *, ...);
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { double d[4]; } vec4;
typedef struct { double d[8]; } vec8;
typedef struct { double primal; double d[3]; } primal_vec3;
extern vec2 __enzyme_fwddiff2(void *, ...);
extern vec3 __enzyme_fwddiff3(void *, ...);
extern vec4 __enzyme_fwddiff4(void *, ...);
extern vec8 __enzyme_fwddiff8(void *, ...);
extern primal_vec3 __enzyme_fwddiff_p3(void *, ...);
extern void __enzyme_fwddiffv(void *, ...);

static int failures = 0;

static void check(const char *what, int lane, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s lane %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, lane, got, want);
}

// ---------------------------------------------------------------- scalars
static double g(double x, double y) {
    if (x > 0.5) return sin(x) * y + x * x * y;
    return exp(x) * y - y * y;
}

static double g_dx(double x, double y) { return x > 0.5 ? cos(x) * y + 2 * x * y : exp(x) * y; }
static double g_dy(double x, double y) { return x > 0.5 ? sin(x) + x * x : exp(x) - 2 * y; }

// calls g in a loop with a running product: a callee, a phi, a branch
static double h(double x, double y, int n) {
    double s = 0, p = 1;
    for (int i = 0; i < n; i++) {
        s += g(x + 0.1 * i, y) * p;
        p *= 0.5;
    }
    return s;
}

static void scalar_widths(int n) {
    double x = 0.3 + 0.1 * n, y = -1.7;
    double dx[8], dy[8];
    for (int k = 0; k < 8; k++) { dx[k] = 1.0 - 0.25 * k; dy[k] = 0.5 * k - 0.3; }
    double want[8];
    for (int k = 0; k < 8; k++) want[k] = __enzyme_fwddiff((void *)h, x, dx[k], y, dy[k], enzyme_const, n);
    for (int k = 0; k < 8; k++) {  // the scalar calls against the closed form
        double c = 0, p = 1;
        for (int i = 0; i < n; i++) { c += (g_dx(x + 0.1 * i, y) * dx[k] + g_dy(x + 0.1 * i, y) * dy[k]) * p; p *= 0.5; }
        check("h scalar call vs closed form", k, want[k], c, 1e-9);
    }
    double w1 = __enzyme_fwddiff((void *)h, enzyme_width, 1, x, dx[0], y, dy[0], enzyme_const, n);
    check("h width 1", 0, w1, want[0], 1e-12);
    vec2 w2 = __enzyme_fwddiff2((void *)h, enzyme_width, 2, x, dx[0], dx[1], y, dy[0], dy[1], enzyme_const, n);
    for (int k = 0; k < 2; k++) check("h width 2", k, w2.d[k], want[k], 1e-12);
    vec3 w3 = __enzyme_fwddiff3((void *)h, enzyme_width, 3, enzyme_dup, x, dx[0], dx[1], dx[2], y, dy[0], dy[1], dy[2],
                                enzyme_const, n);
    for (int k = 0; k < 3; k++) check("h width 3", k, w3.d[k], want[k], 1e-12);
    vec8 w8 = __enzyme_fwddiff8((void *)h, enzyme_width, 8, x, dx[0], dx[1], dx[2], dx[3], dx[4], dx[5], dx[6], dx[7],
                                y, dy[0], dy[1], dy[2], dy[3], dy[4], dy[5], dy[6], dy[7], enzyme_const, n);
    for (int k = 0; k < 8; k++) check("h width 8", k, w8.d[k], want[k], 1e-12);
    primal_vec3 p3 = __enzyme_fwddiff_p3((void *)h, enzyme_width, 3, enzyme_primal_return, x, dx[0], dx[1], dx[2], y,
                                         dy[0], dy[1], dy[2], enzyme_const, n);
    check("h width 3 primal", 0, p3.primal, h(x, y, n), 1e-12);
    for (int k = 0; k < 3; k++) check("h width 3 with primal", k, p3.d[k], want[k], 1e-12);
}

// ---------------------------------------------------------------- memory
#define N 10

// a nonlinear stencil R^N -> R^N through a local array
static void stencil(const double *x, double *out, int n) {
    double t[N];
    for (int i = 0; i < n; i++) t[i] = x[i] * x[i] + sin(x[i]);
    for (int i = 0; i < n; i++) {
        double left = i > 0 ? t[i - 1] : 0, right = i + 1 < n ? t[i + 1] : 0;
        out[i] = left - 2 * t[i] + right + x[i] * right;
    }
}

static double stencil_partial(const double *x, int i, int j, int n) {
    // d out[i] / d x[j]
    double dt = 2 * x[j] + cos(x[j]), r = 0;
    if (j == i - 1) r += dt;
    if (j == i) r += -2 * dt + (i + 1 < n ? x[i + 1] * x[i + 1] + sin(x[i + 1]) : 0);
    if (j == i + 1) r += dt + x[i] * dt;
    return r;
}

// the Jacobian column by column with scalar forward calls
static void jacobian_scalar(const double *x, double jac[N][N], int n) {
    for (int j = 0; j < n; j++) {
        double seed[N] = {0}, out[N], dout[N];
        seed[j] = 1;
        __enzyme_fwddiffv((void *)stencil, enzyme_dup, x, seed, enzyme_dupnoneed, out, dout, enzyme_const, n);
        for (int i = 0; i < n; i++) jac[i][j] = dout[i];
    }
}

// the Jacobian in chunks of `width` columns with enzyme_dupv: seeds[k] is column
// j + k of the identity, douts[k] comes back as column j + k
#define JAC_CHUNKS(W)                                                                                 \
    static void jacobian_width##W(const double *x, double jac[N][N], int n, int j) {                  \
        double seeds[W][N] = {{0}}, out[N], douts[W][N];                                              \
        for (int k = 0; k < W; k++) seeds[k][j + k] = 1;                                              \
        __enzyme_fwddiffv((void *)stencil, enzyme_width, W, enzyme_dupv, (long)sizeof(seeds[0]), x,   \
                          seeds, enzyme_dupnoneedv, (long)sizeof(douts[0]), out, douts, enzyme_const, n); \
        for (int k = 0; k < W; k++)                                                                   \
            for (int i = 0; i < n; i++) jac[i][j + k] = douts[k][i];                                  \
    }
JAC_CHUNKS(1)
JAC_CHUNKS(2)
JAC_CHUNKS(4)

static void arrays(int n) {
    double x[N], jac_s[N][N], jac_v[N][N], jac_1[N][N];
    for (int i = 0; i < n; i++) x[i] = 0.3 * i - 1.1;
    jacobian_scalar(x, jac_s, n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) check("stencil scalar vs closed form", i * N + j, jac_s[i][j], stencil_partial(x, i, j, n), 1e-9);
    int j = 0;
    for (; j + 4 <= n; j += 4) jacobian_width4(x, jac_v, n, j);
    for (; j + 2 <= n; j += 2) jacobian_width2(x, jac_v, n, j);  // 4 does not divide 10
    for (j = 0; j < n; j++) jacobian_width1(x, jac_1, n, j);
    for (int i = 0; i < n; i++)
        for (int j2 = 0; j2 < n; j2++) {
            check("stencil width 4+2", i * N + j2, jac_v[i][j2], jac_s[i][j2], 1e-12);
            check("stencil dupv width 1", i * N + j2, jac_1[i][j2], jac_s[i][j2], 1e-12);
        }
    // enzyme_dup at width 2: two separate shadow pointers per pointer argument
    double s0[N] = {0}, s1[N] = {0}, out[N], d0[N], d1[N];
    s0[3] = 1;
    s1[7] = 1;
    __enzyme_fwddiffv((void *)stencil, enzyme_width, 2, enzyme_dup, x, s0, s1, enzyme_dup, out, d0, d1, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        check("stencil dup width 2 lane 0", i, d0[i], jac_s[i][3], 1e-12);
        check("stencil dup width 2 lane 1", i, d1[i], jac_s[i][7], 1e-12);
        double want_out[N];
        stencil(x, want_out, n);
        check("stencil dup width 2 primal", i, out[i], want_out[i], 1e-12);
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
    double u0[N], u[N], tmp[N], want[3][N], du[3][N], dtmp[3][N];
    for (int i = 0; i < n; i++) u0[i] = sin(0.7 * i);
    for (int k = 0; k < 3; k++) {  // separate scalar calls, tangent cos(i + k)
        double d[N], dt[N] = {0};
        for (int i = 0; i < n; i++) d[i] = du[k][i] = cos(i + k), dtmp[k][i] = 0;
        memcpy(u, u0, sizeof u);
        __enzyme_fwddiffv((void *)heat, enzyme_dup, u, d, enzyme_dup, tmp, dt, enzyme_const, n, enzyme_const, steps);
        memcpy(want[k], d, sizeof d);
    }
    memcpy(u, u0, sizeof u);
    __enzyme_fwddiffv((void *)heat, enzyme_width, 3, enzyme_dupv, (long)sizeof(du[0]), u, du, enzyme_dupv,
                      (long)sizeof(dtmp[0]), tmp, dtmp, enzyme_const, n, enzyme_const, steps);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++) check("heat width 3 vs scalar calls", k * N + i, du[k][i], want[k][i], 1e-12);
}

// an output before an enzyme_dupnoneed scratch buffer: the scratch's parameter, not
// a lane of the output's shadow, is the one whose stores may be dropped
static void with_scratch(double *out, double *scratch, const double *x, int n) {
    for (int i = 0; i < n; i++) scratch[i] = x[i] * x[i];
    for (int i = 0; i < n; i++) out[i] = scratch[i] * x[(i + 1) % n];
}

static void scratch_lanes(int n) {
    double x[N], out[N], scratch[N], dx[2][N], dout[2][N], dscratch[2][N];
    for (int i = 0; i < n; i++) x[i] = 0.5 + 0.1 * i, dx[0][i] = 1, dx[1][i] = i;
    __enzyme_fwddiffv((void *)with_scratch, enzyme_width, 2, enzyme_dupv, (long)sizeof(dout[0]), out, dout,
                      enzyme_dupnoneedv, (long)sizeof(dscratch[0]), scratch, dscratch, enzyme_dupv,
                      (long)sizeof(dx[0]), x, dx, enzyme_const, n);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            int j = (i + 1) % n;
            double want = 2 * x[i] * dx[k][i] * x[j] + x[i] * x[i] * dx[k][j];
            check("scratch after an output, width 2", k * N + i, dout[k][i], want, 1e-12);
        }
}

// a constant function-pointer argument after shadowed ones (zymase specializes the
// callee for it: the lanes' shadows must be counted to find it)
static double cube(double v) { return v * v * v; }

static void map_fn(const double *x, double *out, double (*g)(double), int n) {
    for (int i = 0; i < n; i++) out[i] = g(x[i]) + x[i];
}

static void function_argument_lanes(int n) {
    double x[N], out[N], dx0[N], dx1[N], d0[N], d1[N];
    for (int i = 0; i < n; i++) x[i] = 0.2 * i - 0.5, dx0[i] = 1, dx1[i] = -0.5 * i;
    __enzyme_fwddiffv((void *)map_fn, enzyme_width, 2, enzyme_dup, x, dx0, dx1, enzyme_dupnoneed, out, d0, d1,
                      enzyme_const, cube, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        check("function argument, width 2 lane 0", i, d0[i], (3 * x[i] * x[i] + 1) * dx0[i], 1e-12);
        check("function argument, width 2 lane 1", i, d1[i], (3 * x[i] * x[i] + 1) * dx1[i], 1e-12);
    }
}

// ---------------------------------------------------------------- combos
// At width > 1 a chain of scalar ops keeps its tangent as one combination of the tangents
// it started from, with coefficients computed once for all lanes
// (autodiff/lane_combos.py). Here: products and a quotient, a value used three times, a
// combination of more than 8 leaves, float arithmetic after a conversion, fmin and fabs,
// a value used in another block; and sqrt at 0 with a zero tangent, whose infinite
// partial sends its op lane by lane so that the strong zero holds.
static double chain(const double *x, int flip) {
    double a = x[0], b = x[1], c = x[2], d = x[3], e = x[4], f = x[5], g = x[6], h = x[7], p = x[8], q = x[9];
    double ab = a * b / (1.0 + c * c);
    double u = ab * ab + sin(ab) * d - ab;
    double w = u + e * f - g / h + p * q * a + sqrt(p * p + q * q) + fmin(a, e) * fabs(b);
    float r = (float)w * (float)c;
    double z = w + 1e-3 * (double)(r * r);  // small: float rounding would swamp central differences
    if (flip) z = z * u;
    return z + sqrt(x[10]) * (a + b);  // x[10] = 0, its tangent 0 in every lane
}

#define CHAIN_N 11

static void chain_lanes(int flip) {
    double x[CHAIN_N], seeds[8][CHAIN_N], want[8];
    for (int i = 0; i < CHAIN_N; i++) x[i] = 0.4 + 0.13 * i - 0.05 * flip;
    x[10] = 0;
    for (int k = 0; k < 8; k++) {
        for (int i = 0; i < CHAIN_N; i++) seeds[k][i] = cos(1.0 + 0.7 * k + 0.3 * i);
        seeds[k][10] = 0;
        want[k] = __enzyme_fwddiff((void *)chain, enzyme_dup, x, seeds[k], enzyme_const, flip);
        double xp[CHAIN_N], xm[CHAIN_N], step = 1e-4;  // the scalar call against central differences
        for (int i = 0; i < CHAIN_N; i++) xp[i] = x[i] + step * seeds[k][i], xm[i] = x[i] - step * seeds[k][i];
        check("chain scalar call vs central differences", k, want[k], (chain(xp, flip) - chain(xm, flip)) / (2 * step), 1e-5);
    }
    vec3 w3 = __enzyme_fwddiff3((void *)chain, enzyme_width, 3, enzyme_dupv, (long)sizeof(seeds[0]), x, seeds,
                                enzyme_const, flip);
    for (int k = 0; k < 3; k++) check("chain width 3", k, w3.d[k], want[k], 1e-12);
    vec8 w8 = __enzyme_fwddiff8((void *)chain, enzyme_width, 8, enzyme_dupv, (long)sizeof(seeds[0]), x, seeds,
                                enzyme_const, flip);
    for (int k = 0; k < 8; k++) check("chain width 8", k, w8.d[k], want[k], 1e-12);
}

int main(int argc, char **argv) {
    (void)argv;
    scalar_widths(argc + 2);
    arrays(N + argc - 1);
    heat_lanes(N + argc - 1, 4 + argc);
    scratch_lanes(N + argc - 1);
    function_argument_lanes(N + argc - 1);
    chain_lanes(argc - 1);
    chain_lanes(argc);
    printf("%d failures\n", failures);
    return failures != 0;
}
