/* LAPACK at width 4 (issue 25 item 2): one factorization or decomposition per primal call
   for all lanes, the lanes' right-hand sides solved together (the rules' _fwd_lanes and
   _rev_lanes). dgesv_ with the matrix constant (only the right-hand side active: the
   derivative is one solve with the primal's factors, for every lane at once) and with both
   active, dgetrf_ + dgetrs_, dpotrf_ + dpotrs_, dsyevd_ and dgesdd_, forward and reverse.
   Each lane is checked against a width-1 call with its tangents or seeds and against a
   central finite difference. argv[1] runs one mode alone ("fwd1", "fwd4", "rev1", "rev4",
   "primal"): tests/test_c_blas.py counts the LAPACK calls each makes (a counting shim
   preloaded), so that width 4 is seen to factor as often as width 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_dup, enzyme_dupv, enzyme_width, enzyme_const;
extern double __enzyme_fwddiff(void *, ...);
extern void __enzyme_autodiff(void *, ...);
typedef struct { double d[4]; } vec4;
extern vec4 __enzyme_fwddiff4(void *, ...);

void dpotrf_(const char *, const int *, double *, const int *, int *);
void dpotrs_(const char *, const int *, const int *, const double *, const int *, double *, const int *, int *);
void dgetrf_(const int *, const int *, double *, const int *, int *, int *);
void dgetrs_(const char *, const int *, const int *, const double *, const int *, const int *, double *, const int *,
             int *);
void dgesv_(const int *, const int *, double *, const int *, int *, double *, const int *, int *);
void dsyevd_(const char *, const char *, const int *, double *, const int *, double *, double *, const int *, int *,
             const int *, int *);
void dgesdd_(const char *, const int *, const int *, double *, const int *, double *, double *, const int *, double *,
             const int *, double *, const int *, int *, int *);

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    failures += !ok;
    if (!ok || at % 7 == 0)
        printf("%s %s at %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

#define N 5
#define W 4

/* C is constant (its shadow never given): gesv with only the right-hand side active */
static void model(const double *C, const double *P, const double *b, double *out) {
    int n = N, one = 2, info, ipiv[N];
    double A[N * N], G[N * N], H[N * N], S[N * N], E[N * N], x[2 * N], y[2 * N], z[2 * N], u[2 * N];
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++) {
            A[i + j * N] = C[i + j * N];
            G[i + j * N] = P[i + j * N] + (i == j ? 0.5 : 0.0);
            H[i + j * N] = P[j + i * N] - (i == j ? 0.75 : 0.0);
            S[i + j * N] = P[i + j * N] + P[j + i * N] + (i == j ? 7.0 : 0.0);
            E[i + j * N] = P[i + j * N] + P[j + i * N] + (i == j ? 0.4 * i : 0.0);
        }
    for (int i = 0; i < 2 * N; i++) x[i] = y[i] = u[i] = b[i], z[i] = b[(i + 3) % (2 * N)];
    double s = 0;
    dgesv_(&n, &one, A, &n, ipiv, x, &n, &info); /* A constant, x active */
    for (int i = 0; i < 2 * N; i++) s += (0.5 + 0.25 * i) * x[i] * (1 + 0.1 * x[i]);
    dgesv_(&n, &one, H, &n, ipiv, z, &n, &info); /* both active */
    for (int i = 0; i < 2 * N; i++) s += 0.4 * z[i] * z[i] - 0.1 * H[i];
    dgetrf_(&n, &n, G, &n, ipiv, &info);
    dgetrs_("N", &n, &one, G, &n, ipiv, y, &n, &info);
    for (int i = 0; i < 2 * N; i++) s += (1.0 - 0.2 * i) * y[i] + 0.05 * G[i + 1];
    dpotrf_("U", &n, S, &n, &info);
    dpotrs_("U", &n, &one, S, &n, u, &n, &info);
    for (int i = 0; i < 2 * N; i++) s += 0.3 * u[i] * u[i] + 0.1 * S[i * (N + 1) % (N * N)];
    double w[N], work[1024], sv[N], U[N * N], VT[N * N], R[N * N];
    int lwork = 1024, iwork[64], liwork = 64;
    memcpy(R, G, sizeof R);
    dsyevd_("V", "L", &n, E, &n, w, work, &lwork, iwork, &liwork, &info);
    for (int i = 0; i < N; i++) s += (0.3 + 0.2 * i) * w[i] + 0.1 * i * E[i + 2 * N] * E[i + 2 * N];
    dgesdd_("S", &n, &n, R, &n, sv, U, &n, VT, &n, work, &lwork, iwork, &info);
    for (int i = 0; i < N; i++) s += (0.7 - 0.1 * i) * sv[i];
    *out = s;
}

typedef struct {
    double P[N * N], b[2 * N], out;
} state;

static double C[N * N];

static void init(state *s) {
    for (int i = 0; i < N * N; i++) C[i] = cos(0.7 * i) + (i % (N + 1) == 0 ? 2.5 : 0.0);
    for (int i = 0; i < N * N; i++) s->P[i] = sin(1.3 + 1.7 * i);
    for (int i = 0; i < 2 * N; i++) s->b[i] = 0.5 - 0.3 * i;
    s->out = 0;
}

static void lane_dir(state *d, int k) {
    for (int i = 0; i < N * N; i++) d->P[i] = cos(0.3 * i + k);
    for (int i = 0; i < 2 * N; i++) d->b[i] = 0.5 - 0.25 * i + 0.3 * k;
    d->out = 0;
}

static double run(const state *s, const state *d, double h) {
    state p = *s;
    double out;
    for (int i = 0; i < N * N; i++) p.P[i] += h * d->P[i];
    for (int i = 0; i < 2 * N; i++) p.b[i] += h * d->b[i];
    model(C, p.P, p.b, &out);
    return out;
}

#define FWD1(s, t)                                                                                               \
    __enzyme_fwddiff((void *)model, enzyme_const, C, enzyme_dup, (s).P, (t).P, enzyme_dup, (s).b, (t).b,        \
                     enzyme_dup, &(s).out, &(t).out)
#define REV1(s, g)                                                                                               \
    __enzyme_autodiff((void *)model, enzyme_const, C, enzyme_dup, (s).P, (g).P, enzyme_dup, (s).b, (g).b,       \
                      enzyme_dup, &(s).out, &(g).out)

static void forward(void) {
    state s, t[W];
    init(&s);
    for (int k = 0; k < W; k++) lane_dir(&t[k], k);
    __enzyme_fwddiff4((void *)model, enzyme_width, W, enzyme_const, C, enzyme_dupv, (long)sizeof(state), s.P,
                      t[0].P, enzyme_dupv, (long)sizeof(state), s.b, t[0].b, enzyme_dupv, (long)sizeof(state),
                      &s.out, &t[0].out);
    init(&s);
    for (int k = 0; k < W; k++) {
        state q = s, u;
        lane_dir(&u, k);
        FWD1(q, u);
        double h = 1e-6;
        check("forward width 4 vs width 1", k, t[k].out, u.out, 1e-12);
        check("forward width 4 vs central difference", k, t[k].out, (run(&s, &u, h) - run(&s, &u, -h)) / (2 * h),
              1e-6);
    }
}

static void reverse(void) {
    state s, g[W];
    init(&s);
    memset(g, 0, sizeof g);
    for (int k = 0; k < W; k++) g[k].out = 1.0 + 0.5 * k;
    __enzyme_autodiff((void *)model, enzyme_width, W, enzyme_const, C, enzyme_dupv, (long)sizeof(state), s.P,
                      g[0].P, enzyme_dupv, (long)sizeof(state), s.b, g[0].b, enzyme_dupv, (long)sizeof(state),
                      &s.out, &g[0].out);
    init(&s);
    for (int k = 0; k < W; k++) {
        state q = s, one, v;
        memset(&one, 0, sizeof one);
        one.out = 1.0 + 0.5 * k;
        REV1(q, one);
        for (int i = 0; i < N * N; i++) check("reverse width 4 dP vs width 1", 100 * k + i, g[k].P[i], one.P[i], 1e-12);
        for (int i = 0; i < 2 * N; i++) check("reverse width 4 db vs width 1", 100 * k + i, g[k].b[i], one.b[i], 1e-12);
        lane_dir(&v, k + 5);
        double h = 1e-6, dot = 0;
        for (int i = 0; i < N * N; i++) dot += g[k].P[i] * v.P[i];
        for (int i = 0; i < 2 * N; i++) dot += g[k].b[i] * v.b[i];
        check("reverse width 4 vs central difference", k, dot,
              (1.0 + 0.5 * k) * (run(&s, &v, h) - run(&s, &v, -h)) / (2 * h), 1e-6);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    state s, t, g;
    init(&s);
    lane_dir(&t, 0);
    memset(&g, 0, sizeof g);
    g.out = 1;
    if (!strcmp(mode, "primal"))
        model(C, s.P, s.b, &s.out);
    else if (!strcmp(mode, "fwd1"))
        FWD1(s, t);
    else if (!strcmp(mode, "rev1"))
        REV1(s, g);
    else if (!strcmp(mode, "fwd4") || !strcmp(mode, "rev4")) {
        state ts[W];
        for (int k = 0; k < W; k++) lane_dir(&ts[k], k), ts[k].out = 1.0 + k;
        if (mode[0] == 'f')
            __enzyme_fwddiff4((void *)model, enzyme_width, W, enzyme_const, C, enzyme_dupv, (long)sizeof(state), s.P,
                              ts[0].P, enzyme_dupv, (long)sizeof(state), s.b, ts[0].b, enzyme_dupv,
                              (long)sizeof(state), &s.out, &ts[0].out);
        else
            __enzyme_autodiff((void *)model, enzyme_width, W, enzyme_const, C, enzyme_dupv, (long)sizeof(state), s.P,
                              ts[0].P, enzyme_dupv, (long)sizeof(state), s.b, ts[0].b, enzyme_dupv,
                              (long)sizeof(state), &s.out, &ts[0].out);
    } else {
        forward();
        reverse();
        printf("%d failures\n", failures);
    }
    return failures != 0;
}
