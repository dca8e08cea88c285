/* Structs holding pointers to active memory, passed around by value (issue: silent
   wrong derivatives, item 1): a view { double *data; long n; } returned by value from a
   noinline helper and written and read through; a ternary between two views; views
   kept in an array of structs and handed to a second function; a struct of three
   pointers (returned through sret, passed byval). zymase inlines these helpers, so the
   views are split into their fields before AD; the refusals for the shapes it cannot
   inline are in tests/test_c_pointer_aggregates.py. Reverse and forward mode against
   closed forms. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-9
#define N 3

struct view {
    double *data;
    long n;
};

struct three {
    double *a, *b, *c;
};

__attribute__((noinline)) static struct view make_view(double *p, long n) {
    struct view v = {p, n};
    return v;
}

__attribute__((noinline)) static struct three rotate(struct three t) {
    struct three r = {t.b, t.c, t.a};
    return r;
}

__attribute__((noinline)) static void scale_into(struct view out, struct view in, double k) {
    for (long i = 0; i < in.n; i++) out.data[i] = k * in.data[i];
}

/* y_i = x_i^2 written through a view; returns sum x_i y_i = sum x_i^3 */
static double returned_views(double *x, double *y, long n) {
    struct view vx = make_view(x, n), vy = make_view(y, n);
    double s = 0.0;
    for (long i = 0; i < vy.n; i++) {
        vy.data[i] = vx.data[i] * vx.data[i];
        s += vx.data[i] * vy.data[i];
    }
    return s;
}

/* c ? sum x_i^3 : sum y_i^3 */
static double ternary_view(double *x, double *y, long n, int c) {
    struct view a = {x, n}, b = {y, n};
    struct view v = c ? a : b;
    double s = 0.0;
    for (long i = 0; i < v.n; i++) s += v.data[i] * v.data[i] * v.data[i];
    return s;
}

/* y = 3x through views kept in an array; returns sum y_i x_i = 3 sum x_i^2 */
static double views_in_memory(double *x, double *y, long n) {
    struct view slots[2];
    slots[0] = make_view(x, n);
    slots[1] = make_view(y, n);
    scale_into(slots[1], slots[0], 3.0);
    double s = 0.0;
    for (long i = 0; i < n; i++) s += slots[1].data[i] * slots[0].data[i];
    return s;
}

/* x1^2 x2 through a rotated struct of three pointers */
static double three_pointers(double *x) {
    struct three t = {x, x + 1, x + 2};
    struct three r = rotate(t);
    return *r.a * *r.b * *r.a;
}

static void zero(double *v) {
    for (int i = 0; i < N; i++) v[i] = 0.0;
}

int main(int argc, char **argv) {
    (void)argv;
    long n = 2 + argc; /* N, not a compile-time constant */
    int c = argc > 0;
    double x[N] = {0.5, 1.5, -2.0}, y[N] = {0.25, -1.0, 2.0};
    double dx[N], dy[N], tx[N] = {1.0, 1.0, 1.0}, ty[N] = {1.0, -1.0, 0.5}, w[N], dw[N];

    zero(dx), zero(dw), zero(w);
    __enzyme_autodiff((void *)returned_views, enzyme_dup, x, dx, enzyme_dup, w, dw, enzyme_const, n);
    for (int i = 0; i < N; i++) check("returned_views reverse", x[i], dx[i], 3 * x[i] * x[i], TOL);
    zero(dw);
    check("returned_views forward", 0, __enzyme_fwddiff((void *)returned_views, enzyme_dup, x, tx, enzyme_dup,
                                                         w, dw, enzyme_const, n),
          3 * (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]), TOL);
    for (int i = 0; i < N; i++) check("returned_views forward y", x[i], dw[i], 2 * x[i], TOL);

    zero(dx), zero(dy);
    __enzyme_autodiff((void *)ternary_view, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n, enzyme_const, c);
    for (int i = 0; i < N; i++) {
        check("ternary_view reverse x", x[i], dx[i], 3 * x[i] * x[i], TOL);
        check("ternary_view reverse y", y[i], dy[i], 0.0, TOL);
    }
    double want = 0.0;
    for (int i = 0; i < N; i++) want += 3 * y[i] * y[i] * ty[i];
    check("ternary_view forward", 0, __enzyme_fwddiff((void *)ternary_view, enzyme_dup, x, tx, enzyme_dup, y, ty,
                                                       enzyme_const, n, enzyme_const, 0), want, TOL);

    zero(dx), zero(dw);
    __enzyme_autodiff((void *)views_in_memory, enzyme_dup, x, dx, enzyme_dup, w, dw, enzyme_const, n);
    for (int i = 0; i < N; i++) check("views_in_memory reverse", x[i], dx[i], 6 * x[i], TOL);
    zero(dw);
    check("views_in_memory forward", 0, __enzyme_fwddiff((void *)views_in_memory, enzyme_dup, x, tx, enzyme_dup,
                                                          w, dw, enzyme_const, n),
          6 * (x[0] + x[1] + x[2]), TOL);

    zero(dx);
    __enzyme_autodiff((void *)three_pointers, enzyme_dup, x, dx);
    check("three_pointers reverse x0", x[0], dx[0], 0.0, TOL);
    check("three_pointers reverse x1", x[1], dx[1], 2 * x[1] * x[2], TOL);
    check("three_pointers reverse x2", x[2], dx[2], x[1] * x[1], TOL);
    check("three_pointers forward", 0, __enzyme_fwddiff((void *)three_pointers, enzyme_dup, x, ty),
          2 * x[1] * x[2] * ty[1] + x[1] * x[1] * ty[2], TOL);

    printf("%d failures\n", failures);
    return failures != 0;
}
