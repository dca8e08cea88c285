/* Code under `#pragma clang fp reassociate(on)`: its adjoint and tangent arithmetic carries the
   same permission (reassoc, with nsz), so LLVM may factor q*a + q*b into q*(a + b) in the
   derivative. Two rows of a triangular matrix times four centered points at once (GMM's
   blocked Q (x - mu)), a shared factor times a difference, and a product chain; reverse
   against central differences and forward against the reverse (every seed direction). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    if (!ok || at < 2)
        printf("%-4s %-24s [%3d] got %-24.17g want %-24.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { D = 7, NPTS = 4, TRI = D * (D + 1) / 2, NIN = TRI + D };

/* sum over the 4 points of |Q (x_b - mu)|^2, Q packed row by row, rows taken in pairs */
static double sqnorms(const double *restrict in, const double *restrict x) {
    const double *Q = in, *mu = in + TRI;
    double s = 0.0;
    for (int b = 0; b < NPTS; b += 2) {
        const double *x0 = x + b * D, *x1 = x0 + D;
        int r = 0;
        for (; r + 2 <= D; r += 2) {
            const double *q = Q + r * (r + 1) / 2, *p = q + r + 1;
            double a0 = 0.0, a1 = 0.0, e0 = 0.0, e1 = 0.0;
            for (int c = 0; c <= r; c++) {
#pragma clang fp reassociate(on)
                double y0 = x0[c] - mu[c], y1 = x1[c] - mu[c];
                a0 += q[c] * y0;
                a1 += q[c] * y1;
                e0 += p[c] * y0;
                e1 += p[c] * y1;
            }
            {
#pragma clang fp reassociate(on)
                e0 += p[r + 1] * (x0[r + 1] - mu[r + 1]);
                e1 += p[r + 1] * (x1[r + 1] - mu[r + 1]);
                s += a0 * a0 + a1 * a1 + e0 * e0 + e1 * e1;
            }
        }
        for (; r < D; r++) {
            const double *q = Q + r * (r + 1) / 2;
            double a0 = 0.0, a1 = 0.0;
            for (int c = 0; c <= r; c++) {
#pragma clang fp reassociate(on)
                a0 += q[c] * (x0[c] - mu[c]);
                a1 += q[c] * (x1[c] - mu[c]);
            }
            s += a0 * a0 + a1 * a1;
        }
    }
    return s;
}

/* a shared factor times a difference, and a chain of products, in one order-free sum */
static double shared(const double *restrict in, const double *restrict x) {
#pragma clang fp reassociate(on)
    double s = 0.0;
    for (int i = 0; i + 2 < NIN; i++) {
        double f = in[i] * (x[i % (NPTS * D)] - in[i + 1]);
        s += f * in[i + 2] - in[i] * in[i + 1] * in[i + 2] * 0.25;
    }
    return s;
}

static double objective(const double *restrict in, const double *restrict x) {
    return sqnorms(in, x) + shared(in, x);
}

int main(void) {
    double in[NIN], x[NPTS * D], din[NIN], dx[NPTS * D];
    for (int i = 0; i < NIN; i++)
        in[i] = 0.3 + 0.7 * sin(1.3 * i + 0.2);
    for (int i = 0; i < NPTS * D; i++)
        x[i] = cos(0.9 * i);

    memset(din, 0, sizeof din);
    memset(dx, 0, sizeof dx);
    __enzyme_autodiff((void *)objective, enzyme_dup, in, din, enzyme_dup, x, dx);

    const double h = 1e-6;
    for (int i = 0; i < NIN + NPTS * D; i++) {
        double *v = i < NIN ? &in[i] : &x[i - NIN], keep = *v;
        *v = keep + h;
        double up = objective(in, x);
        *v = keep - h;
        double down = objective(in, x);
        *v = keep;
        double g = i < NIN ? din[i] : dx[i - NIN];
        check("reverse vs differences", i, g, (up - down) / (2 * h), 1e-6);
    }

    /* forward: one tangent per input, each equal to the reverse sweep's entry */
    for (int i = 0; i < NIN + NPTS * D; i++) {
        double tin[NIN] = {0}, tx[NPTS * D] = {0};
        if (i < NIN)
            tin[i] = 1.0;
        else
            tx[i - NIN] = 1.0;
        double t = __enzyme_fwddiff((void *)objective, enzyme_dup, in, tin, enzyme_dup, x, tx);
        check("forward vs reverse", i, t, i < NIN ? din[i] : dx[i - NIN], 1e-12);
    }
    printf("%s\n", failures ? "FAILED" : "all ok");
    return failures != 0;
}
