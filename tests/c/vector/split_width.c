// Split reverse mode in vector mode (issue 25 item 2): __enzyme_augmentfwd and
// __enzyme_reverse with enzyme_width, N. The augmented pass takes N shadows per
// enzyme_dup pointer, runs the primal once and writes one tape; the reverse pass takes
// the same arguments, then N adjoints of the result (one per lane, as a float
// argument's tangents are given), then the tape, and returns N derivatives per active
// float argument, lane by lane ({dx0, dx1, dy0, dy1}). Each lane is checked against a
// width-1 split call with that lane's seeds and against closed forms, at widths 1, 2
// and 3, with the inputs clobbered between the two passes (the reverse reads the tape
// only). Also: a recursive callee that writes active memory, which reverse mode
// differentiates through split mode, inside __enzyme_autodiff at width 2 and 3; the tape
// in the caller's buffer (enzyme_allocated, enzyme_tape) at width 2.
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_dup, enzyme_const, enzyme_width, enzyme_dupv, enzyme_allocated, enzyme_tape;
typedef struct { void *tape; double value; } augmented;
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { double dx, dy; } grad2;
typedef struct { double dx[2], dy[2]; } grad2x2;
typedef struct { double dx[3], dy[3]; } grad2x3;
extern augmented __enzyme_augmentfwd(void *, ...);
extern double __enzyme_augmentfwd_buffer(void *, ...);
extern int __enzyme_augmentsize(void *, ...);
extern grad2 __enzyme_reverse(void *, ...);
extern grad2x2 __enzyme_reverse2(void *, ...);
extern grad2x3 __enzyme_reverse3(void *, ...);
extern double __enzyme_autodiff(void *, ...);
extern vec2 __enzyme_autodiff2(void *, ...);
extern vec3 __enzyme_autodiff3(void *, ...);

static int failures = 0;

static void check(const char *what, int lane, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s lane %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, lane, got, want);
}

#define N 5
#define COMMA ,

// reads p, writes out (a dup output whose shadow is seeded), returns a float: the
// result's adjoint and out's shadow both seed each lane
static double energy(double x, double y, const double *p, double *out, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        out[i] = p[i] * exp(x * i) + y * p[i] * p[i];
        s += out[i] * cos(y * i);
    }
    return s * y;
}

// lane k: result adjoint r[k], out's shadow seeded with sd[k][i]
static void energy_want(double x, double y, const double *p, int n, double r, const double *sd, double *dx, double *dy,
                        double *dp) {
    double s = 0, gx = 0, gy = 0;
    for (int i = 0; i < n; i++) {
        double o = p[i] * exp(x * i) + y * p[i] * p[i], c = cos(y * i);
        s += o * c;
        double dout = r * y * c + sd[i];  // adjoint of out[i]
        gx += dout * p[i] * i * exp(x * i);
        gy += dout * p[i] * p[i] - r * y * o * i * sin(y * i);
        dp[i] += dout * (exp(x * i) + 2 * y * p[i]);
    }
    *dx = gx;
    *dy = gy + r * s;
}

static double seed_of(int k, int i) { return 0.3 * k - 0.2 * i + 0.1; }

// width W: augment, clobber, reverse; lanes against width-1 split calls and the closed form
#define SPLIT_LANES(W, REVERSE, SHADOWS, OUTS, SEEDS)                                                         \
    static void split_width##W(int n) {                                                                       \
        double x = 0.35, y = -0.7, p[N], out[N], dp[W][N] = {{0}}, dout[W][N];                               \
        double r[3] = {1.0, -0.5, 2.5};                                                                       \
        for (int i = 0; i < n; i++) p[i] = 0.4 * i - 0.6;                                                    \
        for (int k = 0; k < W; k++)                                                                           \
            for (int i = 0; i < n; i++) dout[k][i] = seed_of(k, i);                                           \
        augmented aug = __enzyme_augmentfwd((void *)energy, enzyme_width, W, x, y, enzyme_dup, p, SHADOWS,    \
                                            enzyme_dup, out, OUTS, enzyme_const, n);                          \
        check("split primal width " #W, 0, aug.value, energy(x, y, p, out, n), 1e-12);                        \
        double keep[N];                                                                                       \
        memcpy(keep, p, sizeof p);                                                                            \
        for (int i = 0; i < n; i++) p[i] = out[i] = -7; /* clobbered: the reverse reads the tape */          \
        REVERSE g = __enzyme_reverse##W((void *)energy, enzyme_width, W, x, y, enzyme_dup, p, SHADOWS,        \
                                        enzyme_dup, out, OUTS, enzyme_const, n, SEEDS, aug.tape);             \
        for (int k = 0; k < W; k++) {                                                                         \
            double q[N], o[N], d1[N] = {0}, s1[N], wx, wy, wp[N] = {0};                                      \
            memcpy(q, keep, sizeof q);                                                                        \
            for (int i = 0; i < n; i++) s1[i] = seed_of(k, i);                                                \
            energy_want(0.35, -0.7, keep, n, r[k], s1, &wx, &wy, wp);                                         \
            augmented a1 = __enzyme_augmentfwd((void *)energy, 0.35, -0.7, enzyme_dup, q, d1, enzyme_dup, o,  \
                                               s1, enzyme_const, n);                                          \
            grad2 g1 = __enzyme_reverse((void *)energy, 0.35, -0.7, enzyme_dup, q, d1, enzyme_dup, o, s1,     \
                                        enzyme_const, n, r[k], a1.tape);                                      \
            check("split dx width " #W " vs width 1", k, g.dx[k], g1.dx, 1e-12);                             \
            check("split dy width " #W " vs width 1", k, g.dy[k], g1.dy, 1e-12);                             \
            check("split dx width " #W " vs closed form", k, g.dx[k], wx, 1e-10);                            \
            check("split dy width " #W " vs closed form", k, g.dy[k], wy, 1e-10);                            \
            for (int i = 0; i < n; i++) {                                                                     \
                check("split dp width " #W " vs width 1", k * N + i, dp[k][i], d1[i], 1e-12);                 \
                check("split dp width " #W " vs closed form", k * N + i, dp[k][i], wp[i], 1e-10);             \
            }                                                                                                 \
        }                                                                                                     \
    }
SPLIT_LANES(2, grad2x2, dp[0] COMMA dp[1], dout[0] COMMA dout[1], r[0] COMMA r[1])
SPLIT_LANES(3, grad2x3, dp[0] COMMA dp[1] COMMA dp[2], dout[0] COMMA dout[1] COMMA dout[2],
            r[0] COMMA r[1] COMMA r[2])

// width 1 spelled out (enzyme_width, 1 is the scalar call)
static void split_width1(int n) {
    double x = 0.35, y = -0.7, p[N], out[N], dp[N] = {0}, dout[N], wx, wy, wp[N] = {0};
    for (int i = 0; i < n; i++) p[i] = 0.4 * i - 0.6, dout[i] = seed_of(0, i);
    energy_want(x, y, p, n, 1.0, dout, &wx, &wy, wp);
    augmented aug = __enzyme_augmentfwd((void *)energy, enzyme_width, 1, x, y, enzyme_dup, p, dp, enzyme_dup, out,
                                        dout, enzyme_const, n);
    grad2 g = __enzyme_reverse((void *)energy, enzyme_width, 1, x, y, enzyme_dup, p, dp, enzyme_dup, out, dout,
                               enzyme_const, n, 1.0, aug.tape);
    check("split dx width 1 vs closed form", 0, g.dx, wx, 1e-10);
    check("split dy width 1 vs closed form", 0, g.dy, wy, 1e-10);
    for (int i = 0; i < n; i++) check("split dp width 1 vs closed form", i, dp[i], wp[i], 1e-10);
}

// the tape in the caller's buffer (enzyme_allocated, size, enzyme_tape, buffer) at
// width 2, the size from __enzyme_augmentsize; the buffer is reused by a second pair
static void split_caller_tape(int n) {
    char tape[64];
    int size = __enzyme_augmentsize((void *)energy, enzyme_width, 2, 0.35, -0.7, enzyme_dup, (double *)0,
                                    (double *)0, (double *)0, enzyme_dup, (double *)0, (double *)0, (double *)0,
                                    enzyme_const, n);
    for (int round = 0; round < 2; round++) {
        double x = 0.35 + 0.1 * round, y = -0.7, p[N], out[N], dp[2][N] = {{0}}, dout[2][N];
        for (int i = 0; i < n; i++) p[i] = 0.4 * i - 0.6, dout[0][i] = seed_of(0, i), dout[1][i] = seed_of(1, i);
        double value = __enzyme_augmentfwd_buffer((void *)energy, enzyme_allocated, size, enzyme_tape, tape,
                                                  enzyme_width, 2, x, y, enzyme_dupv, (long)sizeof(dp[0]), p, dp,
                                                  enzyme_dupv, (long)sizeof(dout[0]), out, dout, enzyme_const, n);
        check("caller tape primal", round, value, energy(x, y, p, out, n), 1e-12);
        grad2x2 g = __enzyme_reverse2((void *)energy, enzyme_allocated, size, enzyme_tape, tape, enzyme_width, 2,
                                      x, y, enzyme_dupv, (long)sizeof(dp[0]), p, dp, enzyme_dupv,
                                      (long)sizeof(dout[0]), out, dout, enzyme_const, n, 1.0, -0.5);
        double r[2] = {1.0, -0.5};
        for (int k = 0; k < 2; k++) {
            double s1[N], wx, wy, wp[N] = {0};
            for (int i = 0; i < n; i++) s1[i] = seed_of(k, i);
            energy_want(x, y, p, n, r[k], s1, &wx, &wy, wp);
            check("caller tape dx vs closed form", round * 2 + k, g.dx[k], wx, 1e-10);
            check("caller tape dy vs closed form", round * 2 + k, g.dy[k], wy, 1e-10);
            for (int i = 0; i < n; i++) check("caller tape dp vs closed form", k * N + i, dp[k][i], wp[i], 1e-10);
        }
    }
}

// A recursive callee writing active memory: reverse mode calls its augmented function
// in the forward sweep and its reverse function in the reverse sweep (split mode),
// here at the caller's width.
static void rec_scale(double *p, int n, double a) {
    if (n == 0) return;
    p[0] = sin(p[0]) * a;
    rec_scale(p + 1, n - 1, a);
}

static double sum_squares_after(double *p, int n, double a) {
    rec_scale(p, n, a);
    double s = 0;
    for (int i = 0; i < n; i++) s += p[i] * p[i];
    return a * s;
}

// the result seeded 1 in each lane, p's shadows zero: d/dp0[i] and d/da of
// a * sum (a sin p0[i])^2
static void rec_want(const double *p0, int n, double a, double *dp, double *da) {
    double g = 0;
    for (int i = 0; i < n; i++) {
        double s = sin(p0[i]);
        g += 3 * a * a * s * s;
        dp[i] = 2 * a * a * a * s * cos(p0[i]);
    }
    *da = g;
}

#define REC_LANES(W, VEC, SHADOWS)                                                                            \
    static void rec_width##W(int n) {                                                                         \
        double p0[N], p[N], dp[W][N] = {{0}}, a = 0.9, wdp[N], wda;                                           \
        for (int i = 0; i < n; i++) p0[i] = 0.5 + 0.3 * i;                                                    \
        memcpy(p, p0, sizeof p);                                                                              \
        VEC da = __enzyme_autodiff##W((void *)sum_squares_after, enzyme_width, W, enzyme_dup, p, SHADOWS,     \
                                      enzyme_const, n, a);                                                    \
        rec_want(p0, n, a, wdp, &wda);                                                                        \
        for (int k = 0; k < W; k++) {                                                                         \
            double q[N], dq[N] = {0};                                                                         \
            memcpy(q, p0, sizeof q);                                                                          \
            double da1 = __enzyme_autodiff((void *)sum_squares_after, enzyme_dup, q, dq, enzyme_const, n, a); \
            check("recursive split call da width " #W " vs width 1", k, da.d[k], da1, 1e-12);               \
            check("recursive split call da width " #W " vs closed form", k, da.d[k], wda, 1e-10);           \
            for (int i = 0; i < n; i++) {                                                                     \
                check("recursive split call dp width " #W " vs width 1", k * N + i, dp[k][i], dq[i], 1e-12);  \
                check("recursive split call dp width " #W " vs closed form", k * N + i, dp[k][i], wdp[i],    \
                      1e-10);                                                                                 \
            }                                                                                                 \
        }                                                                                                     \
    }
REC_LANES(2, vec2, dp[0] COMMA dp[1])
REC_LANES(3, vec3, dp[0] COMMA dp[1] COMMA dp[2])

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 1 + argc;  // N at run time
    split_width1(n);
    split_width2(n);
    split_width3(n);
    split_caller_tape(n);
    rec_width2(n);
    rec_width3(n);
    printf("%d failures\n", failures);
    return failures != 0;
}
