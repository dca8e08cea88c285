/* A scratch vector filled in one loop and read by the inner loop of a triangular nest, per
   point (ADBench's GMM: xc = x - mu, then the lower-triangular Q times xc). The reverse sweep
   rebuilds xc[c] as x - mu from the one store (c <= r and c < r stay within the filling
   loop's range); where the filling loop stops short of the triangle, the value read was never
   stored by it (calloc's zero) and must not be rebuilt. Reverse against central differences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    if (!ok || at == 0)
        printf("%-4s %-28s [%2d] got %-24.17g want %-24.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { D = 6, N = 4, TRI = D * (D + 1) / 2, NIN = D + TRI };

/* c <= r: the inner bound is r + 1 */
static double lower(const double *in, const double *x, int n, int d) {
    const double *mu = in, *Q = in + d;
    double *xc = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < d; i++)
            xc[i] = x[p * d + i] - mu[i];
        const double *row = Q;
        for (int r = 0; r < d; r++) {
            double a = 0.0;
            for (int c = 0; c <= r; c++)
                a += row[c] * xc[c];
            row += r + 1;
            total += a * a;
        }
    }
    free(xc);
    return total;
}

/* c < r: strictly lower, the inner bound is r itself */
static double strictly_lower(const double *in, const double *x, int n, int d) {
    const double *mu = in, *Q = in + d;
    double *xc = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < d; i++)
            xc[i] = x[p * d + i] * mu[i];
        int pos = 0;
        for (int r = 1; r < d; r++) {
            double a = xc[r];
            for (int c = 0; c < r; c++)
                a += Q[pos++] * xc[c];
            total += a * a * a;
        }
    }
    free(xc);
    return total;
}

/* the filling loop stops at D - 1: the triangle's last row reads calloc's zero (constant
   bounds, so the filling loop runs before the triangle on every path) */
static double short_fill(const double *in, const double *x, int n, int d) {
    const double *mu = in, *Q = in + D;
    double *xc = calloc(D, sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < D - 1; i++)
            xc[i] = x[p * D + i] - mu[i];
        const double *row = Q;
        for (int r = 0; r < D; r++) {
            double a = mu[r];
            for (int c = 0; c <= r; c++)
                a += row[c] * xc[c];
            row += r + 1;
            total += a * a;
        }
    }
    free(xc);
    return total + 0.0 * d;
}

typedef double (*objective)(const double *, const double *, int, int);

/* the gradient din of f against central differences */
static void compare(const char *name, objective f, double *in, const double *x, const double *din) {
    const double h = 1e-6;
    for (int i = 0; i < NIN; i++) {
        double keep = in[i];
        in[i] = keep + h;
        double up = f(in, x, N, D);
        in[i] = keep - h;
        double down = f(in, x, N, D);
        in[i] = keep;
        check(name, i, din[i], (up - down) / (2 * h), 1e-6);
    }
}

int main(void) {
    double in[NIN], x[N * D];
    for (int i = 0; i < NIN; i++)
        in[i] = 0.4 + 0.5 * sin(0.7 * i + 0.3);
    for (int i = 0; i < N * D; i++)
        x[i] = cos(1.1 * i);
    double din[3][NIN];
    memset(din, 0, sizeof din);
    __enzyme_autodiff((void *)lower, enzyme_dup, in, din[0], enzyme_const, x, enzyme_const, N, enzyme_const, D);
    __enzyme_autodiff((void *)strictly_lower, enzyme_dup, in, din[1], enzyme_const, x, enzyme_const, N,
                      enzyme_const, D);
    __enzyme_autodiff((void *)short_fill, enzyme_dup, in, din[2], enzyme_const, x, enzyme_const, N, enzyme_const, D);
    compare("c <= r", lower, in, x, din[0]);
    compare("c < r", strictly_lower, in, x, din[1]);
    compare("fill stops short", short_fill, in, x, din[2]);
    printf("%s\n", failures ? "FAILED" : "all ok");
    return failures != 0;
}
