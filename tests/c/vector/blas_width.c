/* BLAS calls in vector mode (issue 25 item 2): cblas_ddot, cblas_daxpy, cblas_dscal,
   cblas_dgemv and cblas_dgemm (and the Fortran dgemm_) in one function, differentiated by
   __enzyme_autodiff and __enzyme_fwddiff with enzyme_width, N, and by split mode at width N.
   Each call's derivative is its width-1 derivative run once per lane, on that lane's
   shadows (Enzyme's convention); the primal calls run once. Each lane is checked against
   a width-1 call with that lane's seeds or tangents, and against a central finite
   difference, at widths 1, 2 and 3. Built with -lopenblas. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_dupnoneedv, enzyme_width;
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { void *tape; double value; } augmented;
extern void __enzyme_autodiffv(void *, ...);
extern vec2 __enzyme_fwddiff2(void *, ...);
extern vec3 __enzyme_fwddiff3(void *, ...);
extern augmented __enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
            const int *, const double *, const int *, const double *, double *, const int *);

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%s %s at %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

#define NN 4
#define SZ (NN * NN)
#define LANES 3

/* y = 1.5 (A x + 0.5 y + 2 x); C = A B + 0.25 C; D = B^T A (Fortran, column-major)
   returns y.y + sum(w .* C) + sum(w .* D) */
static double model(const double *A, const double *x, double *y, const double *B, double *C, double *D, int n) {
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, A, n, x, 1, 0.5, y, 1);
    cblas_daxpy(n, 2.0, x, 1, y, 1);
    cblas_dscal(n, 1.5, y, 1);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, A, n, B, n, 0.25, C, n);
    double one = 1.0, zero = 0.0;
    dgemm_("T", "N", &n, &n, &n, &one, B, &n, A, &n, &zero, D, &n);
    double s = cblas_ddot(n, y, 1, y, 1);
    for (int i = 0; i < n * n; i++) s += (0.5 + 0.125 * i) * (C[i] + 0.3 * D[i]);
    return s;
}

typedef struct {
    double A[SZ], x[NN], y[NN], B[SZ], C[SZ], D[SZ];
} state;

static void init(state *s) {
    for (int i = 0; i < SZ; i++) {
        s->A[i] = sin(1.0 + i) * 0.5;
        s->B[i] = cos(0.5 + 0.7 * i);
        s->C[i] = 0.1 * i - 0.4;
        s->D[i] = 0;
    }
    for (int i = 0; i < NN; i++) s->x[i] = 0.3 * i - 0.5, s->y[i] = 1.0 - 0.2 * i;
}

static double run(const state *s0, const state *dir, double h) {
    state s = *s0;
    for (int i = 0; i < SZ; i++) s.A[i] += h * dir->A[i], s.B[i] += h * dir->B[i], s.C[i] += h * dir->C[i];
    for (int i = 0; i < NN; i++) s.x[i] += h * dir->x[i], s.y[i] += h * dir->y[i];
    return model(s.A, s.x, s.y, s.B, s.C, s.D, NN);
}

/* lane k's direction (forward tangents) or seeds (reverse shadows of y and C) */
static void lane_state(state *d, int k) {
    for (int i = 0; i < SZ; i++) {
        d->A[i] = cos(0.3 * i + k);
        d->B[i] = sin(0.2 * i - k);
        d->C[i] = 0.05 * (i % 5) - 0.1 * k;
        d->D[i] = 0;
    }
    for (int i = 0; i < NN; i++) d->x[i] = 0.5 - 0.25 * i + k, d->y[i] = 0.1 * k - 0.3 * i;
}

static double dotstate(const state *a, const state *b) {
    double s = 0;
    for (int i = 0; i < SZ; i++) s += a->A[i] * b->A[i] + a->B[i] * b->B[i] + a->C[i] * b->C[i];
    for (int i = 0; i < NN; i++) s += a->x[i] * b->x[i] + a->y[i] * b->y[i];
    return s;
}

/* forward mode at width W: lanes against width 1 and a central difference */
#define FORWARD(W, CALL, RES)                                                                                    \
    static void forward_width##W(void) {                                                                         \
        state s, t[W];                                                                                           \
        init(&s);                                                                                                \
        for (int k = 0; k < W; k++) lane_state(&t[k], k);                                                        \
        state p = s;                                                                                             \
        RES got = CALL((void *)model, enzyme_width, W, enzyme_dupv, (long)sizeof(state), p.A, t[0].A,           \
                       enzyme_dupv, (long)sizeof(state), p.x, t[0].x, enzyme_dupv, (long)sizeof(state), p.y,     \
                       t[0].y, enzyme_dupv, (long)sizeof(state), p.B, t[0].B, enzyme_dupv, (long)sizeof(state),  \
                       p.C, t[0].C, enzyme_dupv, (long)sizeof(state), p.D, t[0].D, enzyme_const, NN);            \
        for (int k = 0; k < W; k++) {                                                                            \
            state q = s, u;                                                                                      \
            lane_state(&u, k);                                                                                   \
            double h = 1e-6, fd = (run(&s, &u, h) - run(&s, &u, -h)) / (2 * h); /* u.y, u.C: tangents, in and out */ \
            double one = __enzyme_fwddiff((void *)model, enzyme_dup, q.A, u.A, enzyme_dup, q.x, u.x, enzyme_dup, \
                                          q.y, u.y, enzyme_dup, q.B, u.B, enzyme_dup, q.C, u.C, enzyme_dup, q.D,  \
                                          u.D, enzyme_const, NN);                                                \
            check("forward width " #W " vs width 1", k, got.d[k], one, 1e-12);                                 \
            check("forward width " #W " vs central difference", k, got.d[k], fd, 1e-6);                         \
            for (int i = 0; i < NN; i++) check("forward width " #W " dy vs width 1", k * NN + i, t[k].y[i], u.y[i], 1e-12); \
            for (int i = 0; i < SZ; i++) {                                                                       \
                check("forward width " #W " dC vs width 1", k * SZ + i, t[k].C[i], u.C[i], 1e-12);             \
                check("forward width " #W " dD vs width 1", k * SZ + i, t[k].D[i], u.D[i], 1e-12);             \
            }                                                                                                    \
        }                                                                                                        \
    }
FORWARD(2, __enzyme_fwddiff2, vec2)
FORWARD(3, __enzyme_fwddiff3, vec3)

/* lane k's reverse-mode seeds: the result 1, y and C lane_state's */
static void seed_lanes(state *g, int w) {
    memset(g, 0, sizeof(state) * LANES);
    for (int k = 0; k < w; k++) {
        state seeds;
        lane_state(&seeds, k);
        memcpy(g[k].y, seeds.y, sizeof seeds.y);
        memcpy(g[k].C, seeds.C, sizeof seeds.C);
    }
}

/* lanes of a reverse call at width w (combined or split), against a width-1 call and a
   central difference along a direction v */
static void check_reverse(int w, int split, const state *s, const state *g) {
    for (int k = 0; k < w; k++) {
        state q = *s, seeds, one;
        lane_state(&seeds, k);
        memset(&one, 0, sizeof one);
        memcpy(one.y, seeds.y, sizeof seeds.y);
        memcpy(one.C, seeds.C, sizeof seeds.C);
        __enzyme_autodiff((void *)model, enzyme_dup, q.A, one.A, enzyme_dup, q.x, one.x, enzyme_dup, q.y, one.y,
                          enzyme_dup, q.B, one.B, enzyme_dup, q.C, one.C, enzyme_dup, q.D, one.D, enzyme_const, NN);
        const char *what = split ? "split reverse vs width 1" : "reverse vs width 1";
        for (int i = 0; i < SZ; i++) {
            check(what, k * SZ + i, g[k].A[i], one.A[i], 1e-12);
            check(what, k * SZ + i, g[k].B[i], one.B[i], 1e-12);
            check(what, k * SZ + i, g[k].C[i], one.C[i], 1e-12);
        }
        for (int i = 0; i < NN; i++) {
            check(what, k * NN + i, g[k].x[i], one.x[i], 1e-12);
            check(what, k * NN + i, g[k].y[i], one.y[i], 1e-12);
        }
        /* lane k's shadows after the call: the gradient of f + seeds_y . y_final +
           seeds_C . C_final with respect to the inputs, checked along a direction v */
        state v, sp = *s, sm = *s;
        lane_state(&v, k + 7);
        double h = 1e-6;
        for (int i = 0; i < SZ; i++) sp.A[i] += h * v.A[i], sm.A[i] -= h * v.A[i], sp.B[i] += h * v.B[i],
                                     sm.B[i] -= h * v.B[i], sp.C[i] += h * v.C[i], sm.C[i] -= h * v.C[i];
        for (int i = 0; i < NN; i++) sp.x[i] += h * v.x[i], sm.x[i] -= h * v.x[i], sp.y[i] += h * v.y[i],
                                     sm.y[i] -= h * v.y[i];
        double fp = model(sp.A, sp.x, sp.y, sp.B, sp.C, sp.D, NN), fm = model(sm.A, sm.x, sm.y, sm.B, sm.C, sm.D, NN);
        for (int i = 0; i < NN; i++) fp += seeds.y[i] * sp.y[i], fm += seeds.y[i] * sm.y[i];
        for (int i = 0; i < SZ; i++) fp += seeds.C[i] * sp.C[i], fm += seeds.C[i] * sm.C[i];
        check(split ? "split reverse vs central difference" : "reverse vs central difference", k, dotstate(&g[k], &v),
              (fp - fm) / (2 * h), 1e-6);
    }
}

#define ARGS(p, g, st)                                                                                           \
    enzyme_dupv, st, p.A, g[0].A, enzyme_dupv, st, p.x, g[0].x, enzyme_dupv, st, p.y, g[0].y, enzyme_dupv, st,   \
        p.B, g[0].B, enzyme_dupv, st, p.C, g[0].C, enzyme_dupv, st, p.D, g[0].D, enzyme_const, NN
#define REVERSE(W, ...)                                                                                          \
    static void reverse_width##W(void) {                                                                         \
        state s, g[LANES], p;                                                                                    \
        long st = (long)sizeof(state);                                                                           \
        init(&s);                                                                                                \
        seed_lanes(g, W);                                                                                        \
        p = s;                                                                                                   \
        __enzyme_autodiffv((void *)model, enzyme_width, W, ARGS(p, g, st));                                     \
        check_reverse(W, 0, &s, g);                                                                              \
        seed_lanes(g, W);                                                                                        \
        p = s;                                                                                                   \
        augmented a = __enzyme_augmentfwd((void *)model, enzyme_width, W, ARGS(p, g, st));                      \
        check("split primal", W, a.value, run(&s, &s, 0.0), 1e-12);                                              \
        for (int i = 0; i < SZ; i++) p.A[i] = p.B[i] = p.C[i] = -9; /* clobbered: the reverse reads the tape */ \
        __enzyme_reverse((void *)model, enzyme_width, W, ARGS(p, g, st), __VA_ARGS__, a.tape);                  \
        check_reverse(W, 1, &s, g);                                                                              \
    }
REVERSE(1, 1.0)
REVERSE(2, 1.0, 1.0)
REVERSE(3, 1.0, 1.0, 1.0)

int main(void) {
    forward_width2();
    forward_width3();
    reverse_width1();
    reverse_width2();
    reverse_width3();
    printf("%d failures\n", failures);
    return failures != 0;
}
