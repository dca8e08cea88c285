// Split reverse mode in vector mode with the result's N adjoints given as Enzyme gives
// them (issue 25 item 2): __enzyme_reverse with enzyme_width, N reads them as one
// [N x double], which C passes as a struct of N: two doubles travel in registers (the
// same arguments as N scalars), three or more in memory (a byval pointer), and a struct
// of floats partly as <2 x float> vectors. Each lane is checked against a width-1 split
// call with that lane's seed and against a closed form, at widths 1, 2, 3 and 5 (which
// does not divide the array's length, 4), for a double result and for a float result
// (widths 2 and 3), with the inputs clobbered between the two passes.
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_dup, enzyme_const, enzyme_width;
typedef struct { void *tape; double value; } augmented;
typedef struct { void *tape; float value; } augmentedf;
typedef struct { double d[1]; } vec1;
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { double d[5]; } vec5;
typedef struct { float d[2]; } fvec2;
typedef struct { float d[3]; } fvec3;
typedef struct { double dx[2]; } dx2;
typedef struct { double dx[3]; } dx3;
typedef struct { double dx[5]; } dx5;
typedef struct { float dx[2]; } fdx2;
typedef struct { float dx[3]; } fdx3;
extern augmented __enzyme_augmentfwd(void *, ...);
extern augmentedf __enzyme_augmentfwd_f(void *, ...);
extern double __enzyme_reverse(void *, ...);
extern dx2 __enzyme_reverse2(void *, ...);
extern dx3 __enzyme_reverse3(void *, ...);
extern dx5 __enzyme_reverse5(void *, ...);
extern float __enzyme_reverse_f(void *, ...);
extern fdx2 __enzyme_reverse_f2(void *, ...);
extern fdx3 __enzyme_reverse_f3(void *, ...);

static int failures = 0;

static void check(const char *what, int lane, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s lane %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, lane, got, want);
}

#define N 4

// x active, p dup: f = x * sum_i p[i]^2 exp(x i)
static double f(double x, const double *p, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += p[i] * p[i] * exp(x * i);
    return x * s;
}

// seed r: dx = r (s + x sum_i p[i]^2 i exp(x i)), dp[i] = r 2 x p[i] exp(x i)
static void f_want(double x, const double *p, int n, double r, double *dx, double *dp) {
    double s = 0, t = 0;
    for (int i = 0; i < n; i++) {
        s += p[i] * p[i] * exp(x * i);
        t += p[i] * p[i] * i * exp(x * i);
        dp[i] = r * 2 * x * p[i] * exp(x * i);
    }
    *dx = r * (s + x * t);
}

static float g(float x, float y) { return x * sinf(y) + y * y * x * x; }

static double seed_of(int k) { return 1.0 - 0.75 * k; }

static void setup(double *p, int n) {
    for (int i = 0; i < n; i++) p[i] = 0.3 * i - 0.4;
}

// width W, the seeds as one struct VEC; lanes against width-1 split calls and the closed form
#define STRUCT_SEEDS(W, VEC, DX, SHADOWS)                                                                     \
    static void seeds_width##W(int n) {                                                                       \
        double x = 0.6, p[N], keep[N], dp[W][N] = {{0}};                                                      \
        VEC seeds;                                                                                            \
        setup(p, n);                                                                                          \
        memcpy(keep, p, sizeof p);                                                                            \
        for (int k = 0; k < W; k++) seeds.d[k] = seed_of(k);                                                  \
        augmented aug = __enzyme_augmentfwd((void *)f, enzyme_width, W, x, enzyme_dup, p, SHADOWS,           \
                                            enzyme_const, n);                                                 \
        check("primal width " #W, 0, aug.value, f(x, keep, n), 1e-12);                                       \
        for (int i = 0; i < n; i++) p[i] = -9; /* clobbered: the reverse reads the tape */                   \
        DX d = __enzyme_reverse##W((void *)f, enzyme_width, W, x, enzyme_dup, p, SHADOWS, enzyme_const, n,    \
                                   seeds, aug.tape);                                                          \
        for (int k = 0; k < W; k++) {                                                                         \
            double q[N], dq[N] = {0}, wx, wp[N];                                                              \
            memcpy(q, keep, sizeof q);                                                                        \
            f_want(0.6, keep, n, seed_of(k), &wx, wp);                                                        \
            augmented a1 = __enzyme_augmentfwd((void *)f, 0.6, enzyme_dup, q, dq, enzyme_const, n);          \
            double d1 = __enzyme_reverse((void *)f, 0.6, enzyme_dup, q, dq, enzyme_const, n, seed_of(k),      \
                                         a1.tape);                                                            \
            check("dx width " #W " vs width 1", k, d.dx[k], d1, 1e-12);                                     \
            check("dx width " #W " vs closed form", k, d.dx[k], wx, 1e-10);                                 \
            for (int i = 0; i < n; i++) {                                                                     \
                check("dp width " #W " vs width 1", k * N + i, dp[k][i], dq[i], 1e-12);                       \
                check("dp width " #W " vs closed form", k * N + i, dp[k][i], wp[i], 1e-10);                   \
            }                                                                                                 \
        }                                                                                                     \
    }
#define COMMA ,
STRUCT_SEEDS(2, vec2, dx2, dp[0] COMMA dp[1])
STRUCT_SEEDS(3, vec3, dx3, dp[0] COMMA dp[1] COMMA dp[2])
STRUCT_SEEDS(5, vec5, dx5, dp[0] COMMA dp[1] COMMA dp[2] COMMA dp[3] COMMA dp[4])

// width 1 spelled out, the seed a struct of one double (passed as the double itself)
static void seeds_width1(int n) {
    double x = 0.6, p[N], dp[N] = {0}, wx, wp[N];
    vec1 seed = {{seed_of(0)}};
    setup(p, n);
    f_want(x, p, n, seed_of(0), &wx, wp);
    augmented aug = __enzyme_augmentfwd((void *)f, enzyme_width, 1, x, enzyme_dup, p, dp, enzyme_const, n);
    double d = __enzyme_reverse((void *)f, enzyme_width, 1, x, enzyme_dup, p, dp, enzyme_const, n, seed, aug.tape);
    check("dx width 1 vs closed form", 0, d, wx, 1e-10);
    for (int i = 0; i < n; i++) check("dp width 1 vs closed form", i, dp[i], wp[i], 1e-10);
}

// a float result: the struct's floats come as <2 x float> (and a float after it at 3)
#define FLOAT_SEEDS(W, VEC, DX)                                                                               \
    static void float_seeds_width##W(void) {                                                                  \
        float x = 0.7f, y = -1.3f;                                                                            \
        VEC seeds;                                                                                            \
        for (int k = 0; k < W; k++) seeds.d[k] = (float)seed_of(k);                                           \
        augmentedf aug = __enzyme_augmentfwd_f((void *)g, enzyme_width, W, x, enzyme_const, y);               \
        DX d = __enzyme_reverse_f##W((void *)g, enzyme_width, W, x, enzyme_const, y, seeds, aug.tape);        \
        for (int k = 0; k < W; k++) {                                                                         \
            augmentedf a1 = __enzyme_augmentfwd_f((void *)g, x, enzyme_const, y);                             \
            float d1 = __enzyme_reverse_f((void *)g, x, enzyme_const, y, (float)seed_of(k), a1.tape);         \
            double r = (float)seed_of(k);                                                                     \
            check("float dx width " #W " vs width 1", k, d.dx[k], d1, 1e-6);                                \
            check("float dx width " #W " vs closed form", k, d.dx[k], r * (sin(y) + 2.0 * y * y * x), 1e-5); \
        }                                                                                                     \
    }
FLOAT_SEEDS(2, fvec2, fdx2)
FLOAT_SEEDS(3, fvec3, fdx3)

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 1 + argc;  // N at run time
    seeds_width1(n);
    seeds_width2(n);
    seeds_width3(n);
    seeds_width5(n);
    float_seeds_width2();
    float_seeds_width3();
    printf("%d failures\n", failures);
    return failures != 0;
}
