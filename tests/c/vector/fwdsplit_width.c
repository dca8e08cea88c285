// Split forward mode in vector mode (issue 25 item 2): __enzyme_augmentfwd and
// __enzyme_fwdsplit with enzyme_width, N, as Enzyme defines them (its augmented primal
// and forward derivative are made per width): the augmented pass takes N shadows per
// enzyme_dup pointer, runs the primal once and writes one tape; the fwdsplit call takes
// N tangents per active float and N shadows per enzyme_dup pointer, then the tape, and
// returns the result's N tangents (a struct of N) and writes the N shadows, from the tape
// alone: the primal inputs are clobbered and the primal pointers passed to it are NULL.
// Each lane is checked against __enzyme_fwddiff at width 1 with that lane's tangents and
// against closed forms, at widths 1, 2, 3 and 5 (5 does not divide the array's length,
// 4), at one tape per call and with enzyme_nofree (one tape, two calls). One function is
// split at every width and at two activity patterns (x active, x const): as in Enzyme,
// each (width, activities) has its own derivative and tape, and each __enzyme_augmentfwd
// pairs with the fwdsplit call of its own width and activities.
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_dup, enzyme_const, enzyme_width, enzyme_nofree;
typedef struct { void *tape; double value; } augmented;
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { double d[5]; } vec5;
extern augmented __enzyme_augmentfwd(void *, ...);
extern double __enzyme_fwdsplit(void *, ...);
extern double __enzyme_fwdsplit1(void *, ...);
extern vec2 __enzyme_fwdsplit2(void *, ...);
extern vec3 __enzyme_fwdsplit3(void *, ...);
extern vec5 __enzyme_fwdsplit5(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;

static void check(const char *what, int lane, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s lane %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, lane, got, want);
}

#define N 4

// x active, p dup (read), out dup (written): out[i] = p[i] exp(x i) + x p[i]^2,
// returns sum_i out[i] cos(x i).
double h(double x, const double *p, double *out, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        out[i] = p[i] * exp(x * i) + x * p[i] * p[i];
        s += out[i] * cos(x * i);
    }
    return s;
}

// closed form: tangent dx of x, dp of p -> dout and the result's tangent
static double h_want(double x, const double *p, int n, double dx, const double *dp, double *dout) {
    double ds = 0;
    for (int i = 0; i < n; i++) {
        double o = p[i] * exp(x * i) + x * p[i] * p[i];
        double d = dp[i] * exp(x * i) + p[i] * i * exp(x * i) * dx + dx * p[i] * p[i] + 2 * x * p[i] * dp[i];
        dout[i] = d;
        ds += d * cos(x * i) - o * i * sin(x * i) * dx;
    }
    return ds;
}

static double dx_of(int k) { return 0.5 - 0.4 * k; }
static double dp_of(int k, int i) { return 0.2 * k - 0.3 * i + 0.1; }

static void setup(double *p, int n) {
    for (int i = 0; i < n; i++) p[i] = 0.35 * i - 0.5;
}

// lane k of a width-W fwdsplit call (dt: the result's tangent, dout: out's shadow) with
// x's tangent dx against __enzyme_fwddiff at width 1 and the closed form
static void check_lane_dx(const char *what, int k, double x, double dx, const double *keep, int n, double dt,
                          const double *dout) {
    double q[N], o[N], dq[N], dox[N], wout[N];
    memcpy(q, keep, sizeof q);
    for (int i = 0; i < n; i++) dq[i] = dp_of(k, i);
    double d1 = __enzyme_fwddiff((void *)h, x, dx, enzyme_dup, q, dq, enzyme_dup, o, dox, enzyme_const, n);
    double want = h_want(x, keep, n, dx, dq, wout);
    check(what, k, dt, d1, 1e-12);
    check(what, k, dt, want, 1e-10);
    for (int i = 0; i < n; i++) {
        check(what, k * N + i, dout[i], dox[i], 1e-12);
        check(what, k * N + i, dout[i], wout[i], 1e-10);
    }
}

static void check_lane(const char *what, int k, double x, const double *keep, int n, double dt, const double *dout) {
    check_lane_dx(what, k, x, dx_of(k), keep, n, dt, dout);
}

#define COMMA ,
#define SPLIT_LANES(W, VEC, DXS, DPS, DOUTS)                                                                  \
    static void fwdsplit_width##W(int n) {                                                                    \
        double x = 0.45, p[N], keep[N], out[N], dp[W][N], dout[W][N], ddx[W];                                 \
        setup(p, n);                                                                                          \
        memcpy(keep, p, sizeof p);                                                                            \
        for (int k = 0; k < W; k++) {                                                                         \
            ddx[k] = dx_of(k);                                                                                \
            for (int i = 0; i < n; i++) dp[k][i] = dp_of(k, i), dout[k][i] = -1;                              \
        }                                                                                                     \
        augmented aug = __enzyme_augmentfwd((void *)h, enzyme_width, W, x, enzyme_dup, p, DPS, enzyme_dup, \
                                            out, DOUTS, enzyme_const, n);                                     \
        check("primal width " #W, 0, aug.value, h(x, keep, out, n), 1e-12);                               \
        for (int i = 0; i < n; i++) p[i] = out[i] = -7; /* clobbered: fwdsplit reads the tape */             \
        VEC t = __enzyme_fwdsplit##W((void *)h, enzyme_width, W, x, DXS, enzyme_dup, (double *)0, DPS,     \
                                     enzyme_dup, (double *)0, DOUTS, enzyme_const, n, aug.tape);              \
        for (int k = 0; k < W; k++) check_lane("fwdsplit width " #W, k, x, keep, n, t.d[k], dout[k]);        \
    }
SPLIT_LANES(2, vec2, ddx[0] COMMA ddx[1], dp[0] COMMA dp[1], dout[0] COMMA dout[1])
SPLIT_LANES(3, vec3, ddx[0] COMMA ddx[1] COMMA ddx[2], dp[0] COMMA dp[1] COMMA dp[2],
            dout[0] COMMA dout[1] COMMA dout[2])
SPLIT_LANES(5, vec5, ddx[0] COMMA ddx[1] COMMA ddx[2] COMMA ddx[3] COMMA ddx[4],
            dp[0] COMMA dp[1] COMMA dp[2] COMMA dp[3] COMMA dp[4],
            dout[0] COMMA dout[1] COMMA dout[2] COMMA dout[3] COMMA dout[4])

// width 1 spelled out (enzyme_width, 1 is the scalar call)
static void fwdsplit_width1(int n) {
    double x = 0.45, p[N], keep[N], out[N], dp[N], dout[N];
    setup(p, n);
    memcpy(keep, p, sizeof p);
    for (int i = 0; i < n; i++) dp[i] = dp_of(0, i);
    augmented aug = __enzyme_augmentfwd((void *)h, enzyme_width, 1, x, enzyme_dup, p, dp, enzyme_dup, out, dout,
                                        enzyme_const, n);
    for (int i = 0; i < n; i++) p[i] = out[i] = -7;
    double t = __enzyme_fwdsplit1((void *)h, enzyme_width, 1, x, dx_of(0), enzyme_dup, (double *)0, dp, enzyme_dup,
                                  (double *)0, dout, enzyme_const, n, aug.tape);
    check_lane("fwdsplit width 1", 0, x, keep, n, t, dout);
}

// enzyme_nofree at width 2: one tape, two calls (lanes 0-1, then lanes 2-3)
static void fwdsplit_nofree(int n) {
    double x = 0.45, p[N], keep[N], out[N], dp[4][N], dout[4][N];
    setup(p, n);
    memcpy(keep, p, sizeof p);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < n; i++) dp[k][i] = dp_of(k, i);
    augmented aug = __enzyme_augmentfwd((void *)h, enzyme_width, 2, x, enzyme_dup, p, dp[0], dp[1],
                                        enzyme_dup, out, dout[0], dout[1], enzyme_const, n);
    for (int i = 0; i < n; i++) p[i] = out[i] = -7;
    for (int round = 0; round < 2; round++) {
        int a = 2 * round, b = a + 1;
        vec2 t = round == 0
                     ? __enzyme_fwdsplit2((void *)h, enzyme_width, 2, enzyme_nofree, x, dx_of(a), dx_of(b),
                                          enzyme_dup, (double *)0, dp[a], dp[b], enzyme_dup, (double *)0, dout[a],
                                          dout[b], enzyme_const, n, aug.tape)
                     : __enzyme_fwdsplit2((void *)h, enzyme_width, 2, x, dx_of(a), dx_of(b), enzyme_dup,
                                          (double *)0, dp[a], dp[b], enzyme_dup, (double *)0, dout[a], dout[b],
                                          enzyme_const, n, aug.tape);
        check_lane("fwdsplit nofree width 2", a, x, keep, n, t.d[0], dout[a]);
        check_lane("fwdsplit nofree width 2", b, x, keep, n, t.d[1], dout[b]);
    }
}

// width 2 with x const: another activity pattern of h at a width used above
static void fwdsplit_x_const(int n) {
    double x = 0.45, p[N], keep[N], out[N], dp[2][N], dout[2][N];
    setup(p, n);
    memcpy(keep, p, sizeof p);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) dp[k][i] = dp_of(k, i);
    augmented aug = __enzyme_augmentfwd((void *)h, enzyme_width, 2, enzyme_const, x, enzyme_dup, p, dp[0], dp[1],
                                        enzyme_dup, out, dout[0], dout[1], enzyme_const, n);
    for (int i = 0; i < n; i++) p[i] = out[i] = -7;
    vec2 t = __enzyme_fwdsplit2((void *)h, enzyme_width, 2, enzyme_const, x, enzyme_dup, (double *)0, dp[0], dp[1],
                                enzyme_dup, (double *)0, dout[0], dout[1], enzyme_const, n, aug.tape);
    for (int k = 0; k < 2; k++) check_lane_dx("fwdsplit x const width 2", k, x, 0.0, keep, n, t.d[k], dout[k]);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 1 + argc;  // N at run time
    fwdsplit_width1(n);
    fwdsplit_width2(n);
    fwdsplit_width3(n);
    fwdsplit_width5(n);
    fwdsplit_nofree(n);
    fwdsplit_x_const(n);
    printf("%d failures\n", failures);
    return failures != 0;
}
