/* Arrays of structs mixing an int and doubles (struct particle { int id; double x, v; }): an energy (reverse, forward) and a symplectic-Euler update in place (seeded shadow structs, the int field of the shadow untouched). */
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

struct particle {
    int id;
    double x, v;
};

#define DT 0.1

/* 1/2 sum v^2 + 1/2 sum k_i x^2 + 1/2 sum (x_{i+1} - x_i)^2, with k_i = 1 + id_i / 2 */
static double energy(const struct particle *p, int n) {
    double e = 0.0;
    for (int i = 0; i < n; i++) {
        double k = 1.0 + 0.5 * p[i].id;
        e += 0.5 * p[i].v * p[i].v + 0.5 * k * p[i].x * p[i].x;
        if (i + 1 < n)
            e += 0.5 * (p[i + 1].x - p[i].x) * (p[i + 1].x - p[i].x);
    }
    return e;
}

/* steps of v -= DT k x; x += DT v, in place */
static void leapfrog(struct particle *p, int n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int i = 0; i < n; i++) {
            double k = 1.0 + 0.5 * p[i].id;
            p[i].v -= DT * k * p[i].x;
            p[i].x += DT * p[i].v;
        }
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4, steps = 3 * argc + 4; /* 5 particles, 7 steps */
    struct particle p[NMAX], p0[NMAX], dp[NMAX], tp[NMAX];
    for (int i = 0; i < n; i++) {
        p0[i].id = (3 * i + 1) % 4;
        p0[i].x = 0.3 * i - 0.5;
        p0[i].v = cos(1.1 * i);
    }

    for (int i = 0; i < n; i++) { p[i] = p0[i]; dp[i].id = -7; dp[i].x = dp[i].v = 0.0; }
    __enzyme_autodiff((void *)energy, enzyme_dup, p, dp, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double k = 1.0 + 0.5 * p[i].id;
        double want = k * p[i].x;
        if (i > 0) want += p[i].x - p[i - 1].x;
        if (i + 1 < n) want -= p[i + 1].x - p[i].x;
        check("energy d/dx", i, dp[i].x, want, TOL);
        check("energy d/dv", i, dp[i].v, p[i].v, TOL);
        check("shadow id field untouched", i, dp[i].id, -7, 0.0);
        tp[i].id = p[i].id;
        tp[i].x = 0.5 - 0.1 * i;
        tp[i].v = 0.25 * i;
        fwd += want * tp[i].x + p[i].v * tp[i].v;
    }
    check("energy forward", n, __enzyme_fwddiff((void *)energy, enzyme_dup, p, tp, n), fwd, TOL);

    /* leapfrog is linear per particle: (x, v) <- M (x, v), M = [[1 - DT^2 k, DT], [-DT k, 1]] */
    for (int i = 0; i < n; i++) { p[i] = p0[i]; dp[i].id = p0[i].id; dp[i].x = 1.0 + 0.1 * i; dp[i].v = 0.5 - 0.2 * i; }
    __enzyme_autodiff((void *)leapfrog, enzyme_dup, p, dp, n, steps);
    for (int i = 0; i < n; i++) {
        double k = 1.0 + 0.5 * p0[i].id;
        double a = 1.0 - DT * DT * k, b = DT, c = -DT * k, d = 1.0;
        double lx = 1.0 + 0.1 * i, lv = 0.5 - 0.2 * i;       /* seed: (M^T)^steps */
        double x = p0[i].x, v = p0[i].v, tx = 0.5 - 0.1 * i, tv = 0.25 * i;
        for (int s = 0; s < steps; s++) {
            double nx = a * lx + c * lv, nv = b * lx + d * lv;
            lx = nx; lv = nv;
            double px = a * x + b * v, pv = c * x + d * v;
            x = px; v = pv;
            double qx = a * tx + b * tv, qv = c * tx + d * tv;
            tx = qx; tv = qv;
        }
        check("leapfrog d/dx0", i, dp[i].x, lx, TOL);
        check("leapfrog d/dv0", i, dp[i].v, lv, TOL);
        check("leapfrog primal x", i, p[i].x, x, TOL);
        check("leapfrog primal v", i, p[i].v, v, TOL);
        tp[i].x = 0.5 - 0.1 * i; tp[i].v = 0.25 * i;
        p[i] = p0[i];
        dp[i].x = tx; dp[i].v = tv; /* keep the wanted tangent */
    }
    __enzyme_fwddiff((void *)leapfrog, enzyme_dup, p, tp, n, steps);
    for (int i = 0; i < n; i++) {
        check("leapfrog forward x", i, tp[i].x, dp[i].x, TOL);
        check("leapfrog forward v", i, tp[i].v, dp[i].v, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
