/* Strong zeros in a loop whose possibly infinite partial is loop-invariant (issue 29): a
   normalization out[i] = x[i] / sumsq(x) scales each adjoint by 1/s, infinite when every x
   is zero (the sum of squares, not the norm: sqrt sets errno without -fno-math-errno, and
   the loop would then call it in every iteration; tests/python/test_strong_zero.py builds
   the norm with -fno-math-errno). The reverse loop is versioned
   (transforms/strong_zero_versioning.py): the copy without guards runs when 1/s is finite,
   the guarded loop otherwise. Either way a zero
   seed contributes exactly zero and a nonzero seed times an infinite partial stays
   infinite; finite cases match the closed form. Also a division by a constant argument
   (only the x partial, 1/s), where s = 0 leaves an infinite partial that only the
   zero seeds must not turn into NaN. */
#include <stdio.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int i, double got, double want) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = isinf(want) ? got == want : (isnan(want) ? isnan(got) : fabs(got - want) <= 1e-12 * scale);
    if (!ok) {
        failures++;
        printf("FAIL %-28s [%d] got %.17g want %.17g\n", what, i, got, want);
    }
}

__attribute__((noinline)) static double sumsq(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

static void normalize(double *restrict out, const double *restrict x, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] / sumsq(x, n);
}

static void scale(double *restrict out, const double *restrict x, double s, int n) {
    for (int i = 0; i < n; i++)
        out[i] = x[i] / s;
}

/* out of the optimizer's sight of main's data and of the trip count */
__attribute__((noinline)) static void grad_normalize(double *out, double *dout, double *x, double *dx, int n) {
    __enzyme_autodiff((void *)normalize, enzyme_dup, out, dout, enzyme_dup, x, dx, enzyme_const, n);
}

__attribute__((noinline)) static void grad_scale(double *out, double *dout, double *x, double *dx, double s, int n) {
    __enzyme_autodiff((void *)scale, enzyme_dup, out, dout, enzyme_dup, x, dx, enzyme_const, s, enzyme_const, n);
}

#define N 37 /* not a multiple of the vector width: the remainder loops run too */
static volatile int n_volatile = N;

int main(void) {
    int n = n_volatile;
    double x[N], out[N], dout[N], dx[N], w[N];
    /* finite: x_i = 1 + i, seeds zero at even i */
    double s2 = 0.0, wx = 0.0;
    for (int i = 0; i < N; i++) {
        x[i] = 1.0 + i;
        w[i] = i % 2 ? 1.0 + 0.5 * i : 0.0;
        s2 += x[i] * x[i];
    }
    for (int i = 0; i < N; i++) wx += w[i] * x[i];
    for (int i = 0; i < N; i++) { dout[i] = w[i]; dx[i] = 0.0; }
    grad_normalize(out, dout, x, dx, n);
    for (int i = 0; i < N; i++) check("normalize, finite", i, dx[i], w[i] / s2 - 2.0 * wx * x[i] / (s2 * s2));

    /* every x zero, every seed zero: 1/m is infinite, the gradient exactly zero */
    for (int i = 0; i < N; i++) { x[i] = 0.0; dout[i] = 0.0; dx[i] = 0.0; }
    grad_normalize(out, dout, x, dx, n);
    for (int i = 0; i < N; i++) check("normalize, zero x, zero seed", i, dx[i], 0.0);

    /* every x zero, one seed nonzero: the derivative is undefined (NaN through s's adjoint) */
    for (int i = 0; i < N; i++) { dout[i] = i == 5 ? 1.0 : 0.0; dx[i] = 0.0; }
    grad_normalize(out, dout, x, dx, n);
    for (int i = 0; i < N; i++) check("normalize, zero x, a seed", i, dx[i], NAN);

    /* x / s, s constant: s = 4 gives seed / 4; s = 0 gives 0 where the seed is 0, else inf */
    for (int i = 0; i < N; i++) x[i] = 1.0 + i;
    for (double s = 4.0; s >= 0.0; s -= 4.0) {
        for (int i = 0; i < N; i++) { dout[i] = w[i]; dx[i] = 0.0; }
        grad_scale(out, dout, x, dx, s, n);
        for (int i = 0; i < N; i++)
            check(s > 0.0 ? "scale by 4" : "scale by 0", i, dx[i], s > 0.0 ? w[i] / 4.0 : (w[i] == 0.0 ? 0.0 : INFINITY));
    }
    if (failures) printf("%d failures\n", failures);
    return failures != 0;
}
