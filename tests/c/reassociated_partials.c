/* Partials that are rounded sums, met in an adjoint sum. Every adjoint sum zymase emits may be
   reassociated (reassoc nsz: reductions in reverse loops vectorize), and LLVM took that as leave
   to reassociate into the operands' own adds, which carry no such permission: the weight x - y
   of w (d/dw = (x - y) + y, rounded as written: 0 for x = 1, y = 1e17) met y once the seed 1 had
   folded, and (x - y) + y became x; in a loop, per element; w (a - C) + w (b + C) became
   (a + b) w. Silently wrong at -O1..-O3 before session 35 (rounded_partials: such partials are read
   behind llvm.arithmetic.fence). Every expected value is the derivative of the program as
   written: the rounded primal values times the derivatives of the operations. Reverse and
   forward mode (forward mode never reassociated: its sums carry no flags). */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
float __enzyme_autodiff_f(float (*)(float, float, float), float, int, float, int, float);

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
#define FTOL 1e-4
#define C 1e17
/* the rounding is the program's meaning: -ffast-math would reassociate the program itself */
#pragma float_control(precise, on, push)

/* d/dw = (x - y) + y */
static double weight(double w, double x, double y) { return w * (x - y) + w * y; }
/* the same through locals (kept in stack slots under --no-preopt) */
static double weight_locals(double w, double x, double y) {
    double d = x - y, t = w * d;
    return t + w * y;
}
static float weight_f(float w, float x, float y) { return w * (x - y) + w * y; }
/* d/dw = sum_i (x_i - y_i) + y_i */
static double weight_sum(double w, const double *x, const double *y, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += w * (x[i] - y[i]) + w * y[i];
    return s;
}
static double weight_sum_split(double w, const double *x, const double *y, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        s += w * (x[i] - y[i]);
        s += w * y[i];
    }
    return s;
}
/* d/dw = d + y n, d = x - y - ... - y through a loop's phi: n = 1 at the call, so LLVM unrolls
   the loop once the derivative is inlined and d becomes x - y (the phi was not fenced: dw was
   x before session 36) */
static double through_phi(double w, double x, double y, int n) {
    double d = x;
    for (int i = 0; i < n; i++)
        d = d - y;
    return w * d + w * y * n;
}
/* the same through a select whose condition the call fixes */
static double through_select(double w, double x, double y, int c) {
    double d = c ? x - y : x + y;
    return w * d + w * y;
}
/* __builtin_canonicalize(v) is v (but for a signaling NaN): d/dx = 6x. It is also the
   barrier the reverse sweep puts on a rounded partial whose adjoint varies per element
   (tests/c/memory/unrolled_partials.c), and a derivative of a derivative meets it */
static double canonical(double x) { return __builtin_canonicalize(x * x) * 3.0; }
/* d/dw = (a - C) + (b + C) */
static double factored(double w, double a, double b) { return w * (a - C) + w * (b + C); }

#pragma float_control(pop)
#pragma float_control(precise, on, push)

static void test(double x, double y, int n) {
    double want = (x - y) + y;
    check("weight reverse", x, __enzyme_autodiff((void *)weight, 2.0, enzyme_const, x, enzyme_const, y), want, TOL);
    check("weight forward", x, __enzyme_fwddiff((void *)weight, 2.0, 1.0, enzyme_const, x, enzyme_const, y), want, TOL);
    check("weight locals reverse", x,
          __enzyme_autodiff((void *)weight_locals, 2.0, enzyme_const, x, enzyme_const, y), want, TOL);
    float xf = (float)x, yf = (float)(y * 1e-9); /* 1e8 against 1: the difference rounds in float */
    check("weight float reverse", x, __enzyme_autodiff_f(weight_f, 2.0f, enzyme_const, xf, enzyme_const, yf),
          (xf - yf) + yf, FTOL);

    /* x_i - y_i rounds to -y_i (y_i a power of two >= 2^60, x_i < 128): the terms are
       multiples of 2^60 then, whose sum in any order is exact (the adjoint sum may be
       reassociated; the primal differences may not) */
    double xs[32], ys[32];
    want = 0;
    for (int i = 0; i < n; i++) {
        xs[i] = x * (i + 1);
        ys[i] = 0x1p60 * (1 << (i % 3));
        want += (xs[i] - ys[i]) + ys[i];
    }
    check("weight sum reverse", x,
          __enzyme_autodiff((void *)weight_sum, 2.0, enzyme_const, xs, enzyme_const, ys, n), want, TOL);
    check("weight sum forward", x,
          __enzyme_fwddiff((void *)weight_sum, 2.0, 1.0, enzyme_const, xs, enzyme_const, ys, n), want, TOL);
    check("weight sum split reverse", x,
          __enzyme_autodiff((void *)weight_sum_split, 2.0, enzyme_const, xs, enzyme_const, ys, n), want, TOL);

    check("through a phi reverse", x,
          __enzyme_autodiff((void *)through_phi, 2.0, enzyme_const, x, enzyme_const, y, enzyme_const, 1), want, TOL);
    check("through a select reverse", x,
          __enzyme_autodiff((void *)through_select, 2.0, enzyme_const, x, enzyme_const, y, enzyme_const, 1), want,
          TOL);
    check("canonicalize reverse", x, __enzyme_autodiff((void *)canonical, x), 6.0 * x, TOL);
    check("canonicalize forward", x, __enzyme_fwddiff((void *)canonical, x, 1.0), 6.0 * x, TOL);

    want = (x - C) + (2.0 * x + C);
    check("factored reverse", x, __enzyme_autodiff((void *)factored, 2.0, enzyme_const, x, enzyme_const, 2.0 * x),
          want, TOL);
    check("factored forward", x,
          __enzyme_fwddiff((void *)factored, 2.0, 1.0, enzyme_const, x, enzyme_const, 2.0 * x), want, TOL);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 20 + argc; /* not a compile-time constant */
    volatile double big = 1e17; /* (kept from being folded into the checks) */
    test(1.0, big, n);
    test(3.0, 2.0 * big, n - 3);
    test(0.375, 4.0 * big, n + 5);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
#pragma float_control(pop)
