// Split reverse mode (__enzyme_augmentfwd / __enzyme_reverse), issue 24 item 1: the
// reverse sweep must depend only on the tape and its own arguments, so the inputs are
// overwritten between the two calls; two tapes are live at once and reversed in the
// order they were made (not LIFO), and one forward pass is never reversed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern int enzyme_dup, enzyme_const;
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-6 * (1 + fabs(want))) {
        printf("FAIL %s: got %.10g want %.10g\n", what, got, want);
        failures++;
    }
}

// in place: x[i] <- sin(x[i]) * x[(i+1) % n] * scale, with a data-dependent branch
void step(double *x, int n, double scale) {
    for (int i = 0; i < n; i++) {
        double v = sin(x[i]) * x[(i + 1) % n] * scale;
        x[i] = v > 0 ? v : exp(v) - 1;
    }
}

static double weighted(const double *x0, int n, double scale, const double *w) {
    double x[8];
    for (int i = 0; i < n; i++) x[i] = x0[i];
    step(x, n, scale);
    double s = 0;
    for (int i = 0; i < n; i++) s += w[i] * x[i];
    return s;
}

static void check_gradient(const char *name, const double *x0, int n, double scale, const double *w,
                           const double *dx) {
    for (int k = 0; k < n; k++) {
        double xp[8], xm[8], h = 1e-6;
        for (int i = 0; i < n; i++) xp[i] = xm[i] = x0[i];
        xp[k] += h;
        xm[k] -= h;
        char what[64];
        snprintf(what, sizeof what, "%s d/dx[%d]", name, k);
        check(what, dx[k], (weighted(xp, n, scale, w) - weighted(xm, n, scale, w)) / (2 * h));
    }
}

int main(void) {
    enum { N = 5 };
    double a0[N] = {0.3, 0.7, -1.1, 2.0, 0.45}, b0[N] = {-0.2, 1.3, 0.9, -0.6, 1.7};
    double wa[N] = {1, 2, 3, 4, 5}, wb[N] = {-1, 0.5, 2, 0.25, 1};
    double a[N], b[N], c[N], da[N], db[N], dc[N];
    for (int i = 0; i < N; i++) {
        a[i] = a0[i]; b[i] = b0[i]; c[i] = a0[i];
        da[i] = wa[i]; db[i] = wb[i]; dc[i] = 1;
    }
    void *tape_a = __enzyme_augmentfwd((void *)step, enzyme_dup, a, da, enzyme_const, N, enzyme_const, 1.5);
    void *tape_b = __enzyme_augmentfwd((void *)step, enzyme_dup, b, db, enzyme_const, N, enzyme_const, 0.5);
    void *tape_c = __enzyme_augmentfwd((void *)step, enzyme_dup, c, dc, enzyme_const, N, enzyme_const, 2.0);
    (void)tape_c;  // a forward pass that is never reversed: its tape is simply not used

    // the forward passes computed the primal
    double want[N];
    for (int i = 0; i < N; i++) want[i] = a0[i];
    step(want, N, 1.5);
    for (int i = 0; i < N; i++) check("primal a", a[i], want[i]);

    // the caller overwrites the inputs between the sweeps
    for (int i = 0; i < N; i++) a[i] = b[i] = 1e6;
    __enzyme_reverse((void *)step, enzyme_dup, a, da, enzyme_const, N, enzyme_const, 1.5, tape_a);
    __enzyme_reverse((void *)step, enzyme_dup, b, db, enzyme_const, N, enzyme_const, 0.5, tape_b);
    check_gradient("a", a0, N, 1.5, wa, da);
    check_gradient("b", b0, N, 0.5, wb, db);

    // many forward passes in a loop, then reversed in the same order
    void *tapes[4];
    double x[4][N], dx[4][N];
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < N; i++) { x[t][i] = a0[i] + 0.1 * t; dx[t][i] = wa[i]; }
        tapes[t] = __enzyme_augmentfwd((void *)step, enzyme_dup, x[t], dx[t], enzyme_const, N, enzyme_const, 1.0);
    }
    for (int t = 0; t < 4; t++) {
        __enzyme_reverse((void *)step, enzyme_dup, x[t], dx[t], enzyme_const, N, enzyme_const, 1.0, tapes[t]);
        double x0[N];
        for (int i = 0; i < N; i++) x0[i] = a0[i] + 0.1 * t;
        check_gradient("loop", x0, N, 1.0, wa, dx[t]);
    }
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
