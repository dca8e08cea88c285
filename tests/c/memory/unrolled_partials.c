/* Partials that are rounded sums, multiplying adjoints read from a shadow array element by
   element: out[2i] = w[i] (x - y), out[2i+1] = w[i] y gives dw[i] = (x - y) dout[2i] + y dout[2i+1],
   0 for x = 1, y = 2^60 and a seed of ones (x - y rounds to -y). The adjoints differ from
   element to element in the loop as written, but the loop runs 4 times: LLVM unrolls it fully
   once the derivative is inlined here, forwards the seed's ones from the caller's array, and
   the adjoint sum (reassoc: reductions vectorize) met (x - y) and y bare, (x - y) + y -> x.
   Silently dw[i] = 1 at -O1..-O3 before session 36 (autodiff/rounded_partials took the fence
   away wherever the adjoint varied per element; it now puts llvm.canonicalize there, which the
   vectorizer can widen and no fold looks through). The same with the trip count in the loop,
   with a sum into one weight w (a loop-carried adjoint), and with a seed array whose size is
   not known (the loop stays a loop, vectorized). */
#include <stdio.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-4d got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got,
           want, tol);
}

#define TOL 1e-8
#define N 64
/* the rounding is the program's meaning: -ffast-math would reassociate the program itself */
#pragma float_control(precise, on, push)

static void pairs(const double *w, double *out, double x, double y, int n) {
    for (int i = 0; i < n; i++) {
        out[2 * i] = w[i] * (x - y);
        out[2 * i + 1] = w[i] * y;
    }
}
/* the trip count written in the loop */
static void pairs4(const double *w, double *out, double x, double y) {
    for (int i = 0; i < 4; i++) {
        out[2 * i] = w[i] * (x - y);
        out[2 * i + 1] = w[i] * y;
    }
}
/* one weight for every element: dw = sum_i (x_i - y) dout[2i] + y dout[2i+1] */
static void shared_weight(const double *w, double *out, const double *x, double y, int n) {
    for (int i = 0; i < n; i++) {
        out[2 * i] = *w * (x[i] - y);
        out[2 * i + 1] = *w * y;
    }
}

#pragma float_control(pop)
#pragma float_control(precise, on, push)

int main(int argc, char **argv) {
    (void)argv;
    volatile double vx = 1.0, vy = 0x1p60; /* (kept from being folded into the checks) */
    double x = vx, y = vy;
    double want = (x - y) + y;

    {
        double w[4] = {1, 2, 3, 4}, dw[4] = {0}, out[8], dout[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        __enzyme_autodiff((void *)pairs, enzyme_dup, w, dw, enzyme_dupnoneed, out, dout, enzyme_const, x,
                          enzyme_const, y, 4);
        for (int i = 0; i < 4; i++)
            check("pairs, 4 elements dw", i, dw[i], want, TOL);
        for (int i = 0; i < 8; i++)
            check("pairs, 4 elements dout zeroed", i, dout[i], 0.0, TOL);
    }
    {
        double w[4] = {1, 2, 3, 4}, dw[4] = {0}, out[8], dout[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        __enzyme_autodiff((void *)pairs4, enzyme_dup, w, dw, enzyme_dupnoneed, out, dout, enzyme_const, x,
                          enzyme_const, y);
        for (int i = 0; i < 4; i++)
            check("pairs, trip count 4 dw", i, dw[i], want, TOL);
    }
    {
        /* x_i - y rounds to -y (x_i < 128): the terms are multiples of 2^60 or small, and
           their sum in any order is exact */
        double xs[4] = {1, 3, 5, 7}, out[8], dout[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        double w = 2.0, dw = 0, sum = 0;
        for (int i = 0; i < 4; i++)
            sum += (xs[i] - y) + y;
        __enzyme_autodiff((void *)shared_weight, enzyme_dup, &w, &dw, enzyme_dupnoneed, out, dout, enzyme_const,
                          xs, enzyme_const, y, 4);
        check("shared weight, 4 elements dw", 0, dw, sum, TOL);
    }
    {
        int n = N - 4 + argc; /* not a compile-time constant */
        static double w[N], dw[N], out[2 * N], dout[2 * N];
        for (int i = 0; i < n; i++) {
            w[i] = 0.5 + i;
            dw[i] = 0;
            dout[2 * i] = dout[2 * i + 1] = 1.0;
        }
        __enzyme_autodiff((void *)pairs, enzyme_dup, w, dw, enzyme_dupnoneed, out, dout, enzyme_const, x,
                          enzyme_const, y, n);
        for (int i = 0; i < n; i += 7)
            check("pairs, n elements dw", i, dw[i], want, TOL);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
#pragma float_control(pop)
