/* Globals that carry state from one call to the next (an accumulator, a smoothed copy of
   the input, a running average in a struct that also holds a pointer): each derivative call takes the globals' values at the call as constants.
   Their shadows used to keep what the previous call left (the adjoint of the initial value
   after a reverse call, its tangent after a forward one), which the next call added in:
   every call after the first was silently wrong at every level. A global of bytes used as
   storage for doubles likewise (session 31), and one that also holds a pointer (session 32). */
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

#define TOL 1e-8
#define N 4

static double acc;   /* never reset by stateful: grows with every call */
static struct {
    const double *p; /* a pointer field next to the state: its shadow is left alone */
    double avg;
} S;                 /* S.avg <- S.avg / 2 + x_0 x_1 through S.p */
static double G[N];  /* G <- G / 2 + x on every call */

static double stateful(const double *x, int n) {
    for (int i = 0; i < n; i++)
        acc += x[i] * x[i];
    for (int i = 0; i < n; i++)
        G[i] = G[i] * 0.5 + x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += G[i] * x[i];
    S.p = x;
    S.avg = S.avg * 0.5 + S.p[0] * S.p[1];
    return acc * x[0] + s + S.avg;
}

/* raw storage for doubles (a global of bytes, whose shadow was never zeroed: at -O0
   every later reverse call added the earlier calls' adjoints in) */
static _Alignas(8) unsigned char bytes[N * sizeof(double)];

static double in_bytes(const double *x, int n) {
    double *b = (double *)bytes;
    for (int i = 0; i < n; i++)
        b[i] += x[i] * x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += b[i];
    return s; /* d/dx_i = 2 x_i, whatever the state */
}

/* a byte global holding a pointer (at a constant offset, so its shadow is kept) next to a
   double carried from call to call: the double's shadow kept the previous call's adjoint
   or tangent at -O0 (session 32) */
static _Alignas(16) unsigned char keep[32];

static double with_pointer(const double *x, int n) {
    double *prev = (double *)(keep + 16);
    double s = *prev * x[0];              /* the value from before the call: a constant */
    *(const double **)keep = x;           /* a pointer stored into the global */
    *prev = x[1] * x[1];                  /* state for the next call */
    const double *again = *(const double **)keep;
    return s + again[n - 2] * x[1];       /* d/dx = (prev0 + 0, x_2, x_1, 0) with n = 4 */
}

/* d/dx_i with acc0, G0 the values before the call:
   2 x_i x_0 + [i = 0] (acc0 + sum x^2) + (G0_i / 2 + x_i) + x_i + d(x_0 x_1)/dx_i */
static double want_grad(const double *x, int n, double acc0, const double *g0, int i) {
    double acc1 = acc0;
    for (int j = 0; j < n; j++)
        acc1 += x[j] * x[j];
    return 2.0 * x[i] * x[0] + (i == 0 ? acc1 : 0.0) + (0.5 * g0[i] + x[i]) + x[i] +
           (i == 0 ? x[1] : i == 1 ? x[0] : 0.0);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3; /* 4 */
    double x[N];
    for (int i = 0; i < n; i++)
        x[i] = 0.3 + 0.4 * sin(1.1 * i + 0.2);
    for (int call = 0; call < 3; call++) {
        double acc0 = acc, g0[N], dx[N] = {0};
        for (int i = 0; i < n; i++)
            g0[i] = G[i];
        __enzyme_autodiff((void *)stateful, enzyme_dup, x, dx, enzyme_const, n);
        for (int i = 0; i < n; i++)
            check(call ? "reverse, a later call" : "reverse, the first call", x[i], dx[i],
                  want_grad(x, n, acc0, g0, i), TOL);
        for (int i = 0; i < n; i++) {
            acc0 = acc;
            for (int j = 0; j < n; j++)
                g0[j] = G[j];
            double t[N] = {0};
            t[i] = 1.0;
            double fwd = __enzyme_fwddiff((void *)stateful, enzyme_dup, x, t, enzyme_const, n);
            check("forward, calls in a row", x[i], fwd, want_grad(x, n, acc0, g0, i), TOL);
        }
        double db[N] = {0};
        __enzyme_autodiff((void *)in_bytes, enzyme_dup, x, db, enzyme_const, n);
        for (int i = 0; i < n; i++)
            check("reverse, state in a byte global", x[i], db[i], 2.0 * x[i], TOL);
        for (int i = 0; i < n; i++) {
            double t[N] = {0};
            t[i] = 1.0;
            double fwd = __enzyme_fwddiff((void *)in_bytes, enzyme_dup, x, t, enzyme_const, n);
            check("forward, state in a byte global", x[i], fwd, 2.0 * x[i], TOL);
        }
        for (int i = 0; i < n; i++) {
            double prev0 = *(double *)(keep + 16), want = i == 0 ? prev0 : i == 1 ? x[2] : i == 2 ? x[1] : 0.0;
            double dk[N] = {0}, t[N] = {0};
            __enzyme_autodiff((void *)with_pointer, enzyme_dup, x, dk, enzyme_const, n);
            check("reverse, a byte global with a pointer", x[i], dk[i], want, TOL);
            prev0 = *(double *)(keep + 16);
            want = i == 0 ? prev0 : i == 1 ? x[2] : i == 2 ? x[1] : 0.0;
            t[i] = 1.0;
            double fwd = __enzyme_fwddiff((void *)with_pointer, enzyme_dup, x, t, enzyme_const, n);
            check("forward, a byte global with a pointer", x[i], fwd, want, TOL);
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
