/* A struct holding a constant pointer next to a duplicated one: `struct problem { const
   double *x; double *y; int n; }` built inside the differentiated function from an
   enzyme_const `x` and an enzyme_dup `y`, and handed by address to noinline helpers that
   read `p->x[i]` and write `p->y[i]` from `p->x` and `p->y`. The struct has a shadow (for
   `y`) whose `x` field holds null: the derivative read `x`'s tangent and added `x`'s
   adjoints through it, a segfault at every level until session 33; the same in an array
   of such structs filled at run-time indices, and in a struct whose address another
   holds. Also the same struct given by the caller (`enzyme_dup, &p, &dp`) with `dp.x`
   pointing at a zeroed buffer (where reverse mode adds the adjoints of `x`, and forward
   mode reads zero tangents). Reverse and forward mode against closed forms and central
   differences. */
#include <stdio.h>
#include <math.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-34s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-9
#define FD_TOL 1e-6
#define N 5

struct problem {
    const double *x;
    double *y;
    int n;
};

/* y_i <- x_i y_i^2 */
__attribute__((noinline)) static void scale_squares(struct problem *p) {
    for (int i = 0; i < p->n; i++) p->y[i] = p->x[i] * p->y[i] * p->y[i];
}

/* y_i <- y_i x_i + sin(y_{i+1}), in place (y_{i+1} not yet updated, except at the end) */
__attribute__((noinline)) static void step(struct problem *p) {
    for (int i = 0; i < p->n; i++) p->y[i] = p->y[i] * p->x[i] + sin(p->y[(i + 1) % p->n]);
}

/* sum_i x_i y_i^2 */
static double squares(const double *x, double *y, int n) {
    struct problem p = {x, y, n};
    scale_squares(&p);
    double s = 0.0;
    for (int i = 0; i < n; i++) s += y[i];
    return s;
}

/* two steps, then sum y_i^2 */
static double two_steps(const double *x, double *y, int n) {
    struct problem p = {x, y, n};
    step(&p);
    step(&p);
    double s = 0.0;
    for (int i = 0; i < p.n; i++) s += p.y[i] * p.y[i];
    return s;
}

/* the caller builds the struct: one step, then sum y_i^2 */
static double given(struct problem *p) {
    step(p);
    double s = 0.0;
    for (int i = 0; i < p->n; i++) s += p->y[i] * p->y[i];
    return s;
}

struct pair {
    const double *c;
    double *y;
};

/* sum over the structs j < k and i < m of c_i y_i^2 (c and y from struct j) */
__attribute__((noinline)) static double weighted(struct pair *ps, int k, int m) {
    double s = 0.0;
    for (int j = 0; j < k; j++)
        for (int i = 0; i < m; i++) s += ps[j].c[i] * ps[j].y[i] * ps[j].y[i];
    return s;
}

/* an array of such structs filled at run-time indices: sum_{i < 2k} c_i y_i^2 */
static double pairs(const double *c, double *y, int k) {
    struct pair ps[2];
    for (int j = 0; j < k; j++) {
        ps[j].c = c + 2 * j;
        ps[j].y = y + 2 * j;
    }
    return weighted(ps, k, 2);
}

struct inner {
    const double *c;
    double *y;
};

struct outer {
    struct inner *in;
    int n;
};

/* sum_i c_i y_i^2 through a struct holding the address of another */
__attribute__((noinline)) static double nested_sum(const struct outer *o) {
    double s = 0.0;
    for (int i = 0; i < o->n; i++) s += o->in->c[i] * o->in->y[i] * o->in->y[i];
    return s;
}

static double nested(const double *c, double *y, int n) {
    struct inner in = {c, y};
    struct outer o = {&in, n};
    return nested_sum(&o);
}

static double given_at(const double *x, const double *y0, int n) {
    double y[N];
    memcpy(y, y0, sizeof y);
    struct problem p = {x, y, n};
    return given(&p);
}

static double two_steps_at(const double *x, const double *y0, int n) {
    double y[N];
    memcpy(y, y0, sizeof y);
    return two_steps(x, y, n);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N + argc - 1;
    double x[N], y0[N], y[N], dy[N], ty[N], zero[N] = {0};
    for (int i = 0; i < N; i++) {
        x[i] = 0.3 + 0.1 * i;
        y0[i] = 0.5 - 0.07 * i * i;
        ty[i] = 0.2 * i - 0.3;
    }

    memcpy(y, y0, sizeof y), memset(dy, 0, sizeof dy);
    __enzyme_autodiff((void *)squares, enzyme_const, x, enzyme_dup, y, dy, n);
    for (int i = 0; i < N; i++) check("squares reverse", y0[i], dy[i], 2 * x[i] * y0[i], TOL);
    double want = 0.0;
    for (int i = 0; i < N; i++) want += 2 * x[i] * y0[i] * ty[i];
    double t[N];
    memcpy(y, y0, sizeof y), memcpy(t, ty, sizeof t);
    check("squares forward", 0, __enzyme_fwddiff((void *)squares, enzyme_const, x, enzyme_dup, y, t, n), want, TOL);

    /* central differences of the coupled steps, per component and along ty */
    double fd[N], fd_dir = 0.0;
    for (int i = 0; i < N; i++) {
        double h = 1e-6, yp[N], ym[N];
        memcpy(yp, y0, sizeof yp), memcpy(ym, y0, sizeof ym);
        yp[i] += h, ym[i] -= h;
        fd[i] = (two_steps_at(x, yp, n) - two_steps_at(x, ym, n)) / (2 * h);
        fd_dir += fd[i] * ty[i];
    }
    memcpy(y, y0, sizeof y), memset(dy, 0, sizeof dy);
    __enzyme_autodiff((void *)two_steps, enzyme_const, x, enzyme_dup, y, dy, n);
    for (int i = 0; i < N; i++) check("two_steps reverse", y0[i], dy[i], fd[i], FD_TOL);
    memcpy(y, y0, sizeof y), memcpy(t, ty, sizeof t);
    check("two_steps forward", 0, __enzyme_fwddiff((void *)two_steps, enzyme_const, x, enzyme_dup, y, t, n), fd_dir,
          FD_TOL);

    int k = 2 + argc - 1;
    memcpy(y, y0, sizeof y), memset(dy, 0, sizeof dy);
    __enzyme_autodiff((void *)pairs, enzyme_const, x, enzyme_dup, y, dy, k);
    for (int i = 0; i < N; i++) check("pairs reverse", y0[i], dy[i], i < 4 ? 2 * x[i] * y0[i] : 0.0, TOL);
    want = 0.0;
    for (int i = 0; i < 4; i++) want += 2 * x[i] * y0[i] * ty[i];
    memcpy(y, y0, sizeof y), memcpy(t, ty, sizeof t);
    check("pairs forward", 0, __enzyme_fwddiff((void *)pairs, enzyme_const, x, enzyme_dup, y, t, k), want, TOL);

    memcpy(y, y0, sizeof y), memset(dy, 0, sizeof dy);
    __enzyme_autodiff((void *)nested, enzyme_const, x, enzyme_dup, y, dy, n);
    for (int i = 0; i < N; i++) check("nested reverse", y0[i], dy[i], 2 * x[i] * y0[i], TOL);
    want = 0.0;
    for (int i = 0; i < N; i++) want += 2 * x[i] * y0[i] * ty[i];
    memcpy(y, y0, sizeof y), memcpy(t, ty, sizeof t);
    check("nested forward", 0, __enzyme_fwddiff((void *)nested, enzyme_const, x, enzyme_dup, y, t, n), want, TOL);

    /* the caller's struct, its shadow's x pointing at zeros */
    fd_dir = 0.0;
    for (int i = 0; i < N; i++) {
        double h = 1e-6, yp[N], ym[N];
        memcpy(yp, y0, sizeof yp), memcpy(ym, y0, sizeof ym);
        yp[i] += h, ym[i] -= h;
        fd[i] = (given_at(x, yp, n) - given_at(x, ym, n)) / (2 * h);
        fd_dir += fd[i] * ty[i];
    }
    memcpy(y, y0, sizeof y), memset(dy, 0, sizeof dy);
    struct problem p = {x, y, n}, dp = {zero, dy, n};
    __enzyme_autodiff((void *)given, enzyme_dup, &p, &dp);
    for (int i = 0; i < N; i++) check("given reverse", y0[i], dy[i], fd[i], FD_TOL);
    memcpy(y, y0, sizeof y), memcpy(t, ty, sizeof t), memset(zero, 0, sizeof zero);
    struct problem q = {x, y, n}, dq = {zero, t, n};
    check("given forward", 0, __enzyme_fwddiff((void *)given, enzyme_dup, &q, &dq), fd_dir, FD_TOL);

    printf("%d failures\n", failures);
    return failures != 0;
}
