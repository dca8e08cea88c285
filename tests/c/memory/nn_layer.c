/* A dense neural-network layer y = tanh(W x + b) with weights and bias dup'd: a squared-error loss against constant targets (scalar result) and the layer into an *out array; reverse and forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static double layer_loss(const double *W, const double *b, const double *x, const double *target, int m, int n) {
    double *z = malloc(m * sizeof(double));
    for (int i = 0; i < m; i++) {
        z[i] = b[i];
        for (int j = 0; j < n; j++)
            z[i] += W[i * n + j] * x[j];
    }
    double loss = 0.0;
    for (int i = 0; i < m; i++) {
        double e = tanh(z[i]) - target[i];
        loss += e * e;
    }
    free(z);
    return loss;
}

static void layer(const double *W, const double *b, const double *x, double *y, int m, int n) {
    for (int i = 0; i < m; i++) {
        double z = b[i];
        for (int j = 0; j < n; j++)
            z += W[i * n + j] * x[j];
        y[i] = tanh(z);
    }
}

#define MAXE 64

int main(int argc, char **argv) {
    (void)argv;
    int m = argc + 2, n = argc + 4; /* 3 outputs, 5 inputs */
    double W[MAXE], dW[MAXE], tW[MAXE], b[MAXE], db[MAXE], x[MAXE], dx[MAXE], tg[MAXE];
    double y[MAXE], dy[MAXE], g[MAXE], v[MAXE], tx[MAXE];
    for (int k = 0; k < m * n; k++) { W[k] = 0.3 * sin(1.3 * k + 0.2); tW[k] = 0.1 * (k % 4) - 0.15; }
    for (int i = 0; i < m; i++) { b[i] = 0.1 * i - 0.1; tg[i] = 0.5 - 0.3 * i; }
    for (int j = 0; j < n; j++) { x[j] = 1.0 - 0.35 * j; tx[j] = 0.2; }
    for (int i = 0; i < m; i++) {
        double z = b[i];
        for (int j = 0; j < n; j++) z += W[i * n + j] * x[j];
        v[i] = tanh(z);
        g[i] = 2.0 * (v[i] - tg[i]) * (1.0 - v[i] * v[i]); /* dloss/dz_i */
    }
    for (int k = 0; k < m * n; k++) dW[k] = 0.0;
    for (int i = 0; i < m; i++) db[i] = 0.0;
    for (int j = 0; j < n; j++) dx[j] = 0.0;
    __enzyme_autodiff((void *)layer_loss, enzyme_dup, W, dW, enzyme_dup, b, db, enzyme_dup, x, dx, enzyme_const, tg, m, n);
    double fwd = 0.0;
    for (int i = 0; i < m; i++) {
        check("layer_loss db", i, db[i], g[i], TOL);
        for (int j = 0; j < n; j++) {
            check("layer_loss dW", i * n + j, dW[i * n + j], g[i] * x[j], TOL);
            fwd += g[i] * tW[i * n + j] * x[j];
        }
    }
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = 0; i < m; i++) want += W[i * n + j] * g[i];
        check("layer_loss dx", j, dx[j], want, TOL);
    }
    check("layer_loss forward (W only)", m * n,
          __enzyme_fwddiff((void *)layer_loss, enzyme_dup, W, tW, enzyme_const, b, enzyme_const, x, enzyme_const, tg, m, n), fwd, TOL);

    /* the layer itself: seed dy, g_i = dy_i (1 - y_i^2) */
    for (int k = 0; k < m * n; k++) dW[k] = 0.0;
    for (int i = 0; i < m; i++) { db[i] = 0.0; dy[i] = 1.0 + 0.5 * i; }
    __enzyme_autodiff((void *)layer, enzyme_dup, W, dW, enzyme_dup, b, db, enzyme_const, x, enzyme_dup, y, dy, m, n);
    for (int i = 0; i < m; i++) {
        double gi = (1.0 + 0.5 * i) * (1.0 - v[i] * v[i]);
        check("layer db", i, db[i], gi, TOL);
        for (int j = 0; j < n; j++)
            check("layer dW", i * n + j, dW[i * n + j], gi * x[j], TOL);
        check("layer dy zeroed", i, dy[i], 0.0, TOL);
        check("layer primal", i, y[i], v[i], TOL);
    }
    for (int i = 0; i < m; i++) dy[i] = 0.0;
    __enzyme_fwddiff((void *)layer, enzyme_dup, W, tW, enzyme_const, b, enzyme_dup, x, tx, enzyme_dup, y, dy, m, n);
    for (int i = 0; i < m; i++) {
        double tz = 0.0;
        for (int j = 0; j < n; j++) tz += tW[i * n + j] * x[j] + W[i * n + j] * tx[j];
        check("layer forward", i, dy[i], (1.0 - v[i] * v[i]) * tz, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
