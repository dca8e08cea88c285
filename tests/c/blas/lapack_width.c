/* LAPACK calls in vector mode (issue 25 item 2): dpotrf_/dpotrs_, dgetrf_/dgetrs_, dgesv_,
   dsyev_, dsyevd_, dgesdd_ and dgelsd_ in one function with two outputs, differentiated by
   __enzyme_fwddiff and __enzyme_autodiff with enzyme_width, N. Each call's derivative is its
   width-1 derivative run once per lane on that lane's shadows, reading what the primal call
   computed or what _save kept once for all lanes. Each lane is checked against a width-1
   call with that lane's tangents or seeds and against a central finite difference, forward
   at widths 2 and 3, reverse at widths 1, 2 and 3. The matrices are not diagonally
   dominant (the LU pivots) and their eigen- and singular values are distinct. */
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_dup, enzyme_dupv, enzyme_width;
extern double __enzyme_fwddiff(void *, ...);
extern void __enzyme_autodiff(void *, ...);
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
extern vec2 __enzyme_fwddiff2(void *, ...);
extern vec3 __enzyme_fwddiff3(void *, ...);

void dpotrf_(const char *, const int *, double *, const int *, int *);
void dpotrs_(const char *, const int *, const int *, const double *, const int *, double *, const int *, int *);
void dgetrf_(const int *, const int *, double *, const int *, int *, int *);
void dgetrs_(const char *, const int *, const int *, const double *, const int *, const int *, double *, const int *,
             int *);
void dgesv_(const int *, const int *, double *, const int *, int *, double *, const int *, int *);
void dsyev_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *);
void dsyevd_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *,
             const int *, int *);
void dgesdd_(const char *, const int *, const int *, double *, const int *, double *, double *, const int *, double *,
             const int *, double *, const int *, int *, int *);
void dgelsd_(const int *, const int *, const int *, double *, const int *, double *, const int *, double *,
             const double *, int *, double *, const int *, int *, int *);

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%s %s at %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

#define N 4
#define M 5 /* R is M x K (tall), for the SVD and least squares */
#define K 3
#define LANES 3

/* out[0] and out[1]: weighted sums of what each factorization, decomposition or solve gives */
static void model(const double *P, const double *R, const double *b, double *out) {
    int n = N, m = M, k = K, one = 1, info, ipiv[N];
    double S[N * N], G[N * N], H[N * N], E[N * N], E2[N * N], x[N], y[N], z[N];
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            double sym = P[i + j * N] + P[j + i * N];
            S[i + j * N] = sym + (i == j ? 6.0 : 0.0);      /* positive definite */
            G[i + j * N] = P[i + j * N] + (i == j ? 0.5 : 0.0); /* pivots */
            H[i + j * N] = P[j + i * N] - (i == j ? 0.75 : 0.0);
            E[i + j * N] = E2[i + j * N] = sym + (i == j ? 0.3 * i : 0.0);
        }
    for (int i = 0; i < N; i++) x[i] = y[i] = b[i], z[i] = b[i + 1];
    double s0 = 0, s1 = 0;
    /* Cholesky and its solve (the factor read by the program too) */
    dpotrf_("L", &n, S, &n, &info);
    dpotrs_("L", &n, &one, S, &n, x, &n, &info);
    for (int i = 0; i < N; i++) s0 += (0.5 + 0.25 * i) * x[i] + 0.1 * S[i + i * N], s1 += x[i] * x[i];
    /* LU and its solve, transposed */
    dgetrf_(&n, &n, G, &n, ipiv, &info);
    dgetrs_("T", &n, &one, G, &n, ipiv, y, &n, &info);
    for (int i = 0; i < N; i++) s0 += (1.0 - 0.2 * i) * y[i], s1 += 0.3 * y[i] * y[i] + 0.05 * G[i + 1];
    /* both at once */
    dgesv_(&n, &one, H, &n, ipiv, z, &n, &info);
    for (int i = 0; i < N; i++) s0 += 0.4 * z[i] * z[i], s1 += (0.2 + 0.1 * i) * z[i];
    /* eigenvalues and squared eigenvectors (their sign is LAPACK's choice) */
    double w[N], w2[N], work[2048];
    int lwork = 2048, iwork[64], liwork = 64;
    dsyev_("V", "U", &n, E, &n, w, work, &lwork, &info);
    dsyevd_("V", "L", &n, E2, &n, w2, work, &lwork, iwork, &liwork, &info);
    for (int i = 0; i < N; i++) {
        s0 += (0.3 + 0.2 * i) * w[i] - 0.1 * i * w2[i];
        for (int j = 0; j < N; j++) s1 += (0.1 * i + 0.05 * j) * E[i + j * N] * E[i + j * N] - 0.2 * (i == j) * E2[i + j * N] * E2[i + j * N];
    }
    /* singular values and squared left singular vectors of the tall R */
    double C[M * K], sv[K], U[M * K], VT[K * K];
    memcpy(C, R, sizeof C);
    dgesdd_("S", &m, &k, C, &m, sv, U, &m, VT, &k, work, &lwork, iwork, &info);
    for (int i = 0; i < K; i++) {
        s0 += (0.7 - 0.1 * i) * sv[i];
        for (int r = 0; r < M; r++) s1 += (0.05 * r + 0.1 * i) * U[r + i * M] * U[r + i * M];
    }
    /* least squares with R: the solution in the first K entries of rhs */
    double L[M * K], rhs[M], rank_cut = -1;
    int rank;
    memcpy(L, R, sizeof L);
    for (int i = 0; i < M; i++) rhs[i] = b[i] * (1.0 + 0.1 * i);
    dgelsd_(&m, &k, &one, L, &m, rhs, &m, sv, &rank_cut, &rank, work, &lwork, iwork, &info);
    for (int i = 0; i < K; i++) s0 += (0.6 + 0.3 * i) * rhs[i], s1 -= 0.25 * rhs[i] * rhs[i] + 0.1 * sv[i];
    out[0] = s0;
    out[1] = s1;
}

typedef struct {
    double P[N * N], R[M * K], b[M], out[2];
} state;

static void init(state *s) {
    for (int i = 0; i < N * N; i++) s->P[i] = sin(1.3 + 1.7 * i);
    for (int i = 0; i < M * K; i++) s->R[i] = cos(0.4 + 0.9 * i) + (i % (M + 1) == 0 ? 1.5 : 0.0);
    for (int i = 0; i < M; i++) s->b[i] = 0.5 - 0.3 * i;
    s->out[0] = s->out[1] = 0;
}

/* lane k's tangents (forward) or its direction for the finite difference (reverse) */
static void lane_dir(state *d, int k) {
    for (int i = 0; i < N * N; i++) d->P[i] = cos(0.3 * i + k);
    for (int i = 0; i < M * K; i++) d->R[i] = sin(0.2 * i - 0.7 * k);
    for (int i = 0; i < M; i++) d->b[i] = 0.5 - 0.25 * i + 0.3 * k;
    d->out[0] = d->out[1] = 0;
}

/* out at s + h d */
static void run(const state *s, const state *d, double h, double *out) {
    state p = *s;
    for (int i = 0; i < N * N; i++) p.P[i] += h * d->P[i];
    for (int i = 0; i < M * K; i++) p.R[i] += h * d->R[i];
    for (int i = 0; i < M; i++) p.b[i] += h * d->b[i];
    model(p.P, p.R, p.b, out);
}

static double dot_inputs(const state *a, const state *b) {
    double s = 0;
    for (int i = 0; i < N * N; i++) s += a->P[i] * b->P[i];
    for (int i = 0; i < M * K; i++) s += a->R[i] * b->R[i];
    for (int i = 0; i < M; i++) s += a->b[i] * b->b[i];
    return s;
}

/* forward mode at width W: each lane's output tangents against width 1 and a central difference */
#define FORWARD(W, CALL, RES)                                                                                    \
    static void forward_width##W(void) {                                                                         \
        state s, t[W];                                                                                           \
        init(&s);                                                                                                \
        for (int k = 0; k < W; k++) lane_dir(&t[k], k);                                                          \
        CALL((void *)model, enzyme_width, W, enzyme_dupv, (long)sizeof(state), s.P, t[0].P, enzyme_dupv,        \
             (long)sizeof(state), s.R, t[0].R, enzyme_dupv, (long)sizeof(state), s.b, t[0].b, enzyme_dupv,       \
             (long)sizeof(state), s.out, t[0].out);                                                              \
        init(&s);                                                                                                \
        for (int k = 0; k < W; k++) {                                                                            \
            state q = s, u;                                                                                      \
            lane_dir(&u, k);                                                                                     \
            __enzyme_fwddiff((void *)model, enzyme_dup, q.P, u.P, enzyme_dup, q.R, u.R, enzyme_dup, q.b, u.b,    \
                             enzyme_dup, q.out, u.out);                                                          \
            double h = 1e-6, fp[2], fm[2];                                                                       \
            run(&s, &u, h, fp);                                                                                  \
            run(&s, &u, -h, fm);                                                                                 \
            for (int o = 0; o < 2; o++) {                                                                        \
                check("forward width " #W " vs width 1", 2 * k + o, t[k].out[o], u.out[o], 1e-12);             \
                check("forward width " #W " vs central difference", 2 * k + o, t[k].out[o],                     \
                      (fp[o] - fm[o]) / (2 * h), 1e-6);                                                          \
            }                                                                                                    \
        }                                                                                                        \
    }
FORWARD(2, __enzyme_fwddiff2, vec2)
FORWARD(3, __enzyme_fwddiff3, vec3)

/* lane k's seeds on the two outputs */
static void seed(state *g, int k) {
    memset(g, 0, sizeof *g);
    g->out[0] = 1.0 + 0.5 * k;
    g->out[1] = 0.75 - 0.5 * k;
}

/* reverse mode at width W: each lane's gradient against width 1 (every entry) and a
   central difference along a direction */
#define REVERSE(W)                                                                                               \
    static void reverse_width##W(void) {                                                                         \
        state s, g[W];                                                                                           \
        init(&s);                                                                                                \
        for (int k = 0; k < W; k++) seed(&g[k], k);                                                              \
        __enzyme_autodiff((void *)model, enzyme_width, W, enzyme_dupv, (long)sizeof(state), s.P, g[0].P,        \
                          enzyme_dupv, (long)sizeof(state), s.R, g[0].R, enzyme_dupv, (long)sizeof(state), s.b,  \
                          g[0].b, enzyme_dupv, (long)sizeof(state), s.out, g[0].out);                            \
        init(&s);                                                                                                \
        for (int k = 0; k < W; k++) {                                                                            \
            state q = s, one, v;                                                                                 \
            seed(&one, k);                                                                                       \
            double w0 = one.out[0], w1 = one.out[1];                                                             \
            __enzyme_autodiff((void *)model, enzyme_dup, q.P, one.P, enzyme_dup, q.R, one.R, enzyme_dup, q.b,    \
                              one.b, enzyme_dup, q.out, one.out);                                                \
            for (int i = 0; i < N * N; i++) check("reverse width " #W " dP vs width 1", k * 100 + i, g[k].P[i], one.P[i], 1e-12); \
            for (int i = 0; i < M * K; i++) check("reverse width " #W " dR vs width 1", k * 100 + i, g[k].R[i], one.R[i], 1e-12); \
            for (int i = 0; i < M; i++) check("reverse width " #W " db vs width 1", k * 100 + i, g[k].b[i], one.b[i], 1e-12); \
            lane_dir(&v, k + 5);                                                                                 \
            double h = 1e-6, fp[2], fm[2];                                                                       \
            run(&s, &v, h, fp);                                                                                  \
            run(&s, &v, -h, fm);                                                                                 \
            check("reverse width " #W " vs central difference", k, dot_inputs(&g[k], &v),                        \
                  (w0 * (fp[0] - fm[0]) + w1 * (fp[1] - fm[1])) / (2 * h), 1e-6);                                \
        }                                                                                                        \
    }
REVERSE(1)
REVERSE(2)
REVERSE(3)

int main(void) {
    forward_width2();
    forward_width3();
    reverse_width1();
    reverse_width2();
    reverse_width3();
    printf("%d failures\n", failures);
    return failures != 0;
}
