/* Values the reverse sweep needs that are the same in every iteration of some loop around them:
   exp(q[c][i]) does not depend on the point p, and in the triangular loop xc[j] does not depend on i
   (the loop writes qx only). The tape keeps them once per iteration of the loops they do depend on.
   The scratch arrays are overwritten for every (point, component), so nothing else can be re-read;
   one load of xc[j] is conditional, so LLVM cannot hoist it before AD. Each gradient entry is checked
   against central finite differences. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-8s[%2d] got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define N 4
#define K 3
#define D 4

__attribute__((noinline)) static double mixture(const double *mu, const double *q, const double *x, int n, int k,
                                                int d) {
    double *xc = malloc(d * sizeof(double)), *qx = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int c = 0; c < k; c++) {
            for (int i = 0; i < d; i++) xc[i] = x[p * d + i] - mu[c * d + i];
            for (int i = 0; i < d; i++) qx[i] = exp(q[c * d + i]) * xc[i];
            for (int j = 0; j < d; j++)
                for (int i = j + 1; i < d; i++) {
                    double t = qx[i] * qx[i];
                    if (t > 0.01) qx[i] += 0.3 * xc[j] * t;
                    else qx[i] -= 0.2 * xc[j];
                }
            double s = 0.0;
            for (int i = 0; i < d; i++) s += qx[i] * qx[i];
            total += log(1.0 + s);
        }
    }
    free(xc);
    free(qx);
    return total;
}

static double value(const double *mu, const double *q, const double *x) {
    return mixture(mu, q, x, N, K, D);
}

int main(void) {
    double mu[K * D], q[K * D], x[N * D], dmu[K * D] = {0}, dq[K * D] = {0};
    for (int i = 0; i < K * D; i++) {
        mu[i] = 0.3 * sin(1.0 + i);
        q[i] = 0.2 * cos(2.0 + 0.7 * i);
    }
    for (int i = 0; i < N * D; i++) x[i] = sin(0.5 * i) + 0.1 * i;
    __enzyme_autodiff((void *)mixture, enzyme_dup, mu, dmu, enzyme_dup, q, dq, enzyme_const, x, enzyme_const, N,
                      enzyme_const, K, enzyme_const, D);
    const double h = 1e-6;
    for (int i = 0; i < K * D; i++) {
        double keep = mu[i];
        mu[i] = keep + h;
        double up = value(mu, q, x);
        mu[i] = keep - h;
        double dn = value(mu, q, x);
        mu[i] = keep;
        check("dmu", i, dmu[i], (up - dn) / (2 * h), 1e-6);
    }
    for (int i = 0; i < K * D; i++) {
        double keep = q[i];
        q[i] = keep + h;
        double up = value(mu, q, x);
        q[i] = keep - h;
        double dn = value(mu, q, x);
        q[i] = keep;
        check("dq", i, dq[i], (up - dn) / (2 * h), 1e-6);
    }
    printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures != 0;
}
