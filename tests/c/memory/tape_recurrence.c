/* A two-cell state in memory overwritten on every iteration of a run-time-length loop (the reverse sweep needs every overwritten value: the tape): reverse with the state seeded, against a hand adjoint over the stored trajectory; forward against the tangent recurrence. */
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

/* s0 <- sin(s0) x_i / 2 + s1 / 4 + x_i / 2; s1 <- s1 / 2 + x_i s0 / 2 (the new s0) */
static void evolve(double *s, const double *x, int n) {
    for (int i = 0; i < n; i++) {
        s[0] = 0.5 * sin(s[0]) * x[i] + 0.25 * s[1] + 0.5 * x[i];
        s[1] = 0.5 * s[1] + 0.5 * x[i] * s[0];
    }
}

/* the same loop returning a scalar, the state living in a malloc'd cell pair */
static double evolve_sum(const double *x, int n) {
    double *s = malloc(2 * sizeof(double));
    s[0] = 0.3;
    s[1] = -0.2;
    double acc = 0.0;
    for (int i = 0; i < n; i++) {
        s[0] = 0.5 * sin(s[0]) * x[i] + 0.25 * s[1] + 0.5 * x[i];
        s[1] = 0.5 * s[1] + 0.5 * x[i] * s[0];
        acc += s[0] * s[1];
    }
    free(s);
    return acc;
}

#define NMAX 64

int main(int argc, char **argv) {
    (void)argv;
    int n = 10 * argc + 30; /* 40 */
    double x[NMAX], dx[NMAX], t[NMAX], S0[NMAX + 1], S1[NMAX + 1];
    for (int i = 0; i < n; i++) { x[i] = 1.2 + 0.6 * cos(0.77 * i); t[i] = 0.1 * (i % 5) - 0.2; }
    for (int v = 0; v < 2; v++) {
        int len = v ? n : argc + 7; /* 8 steps for the final state, 40 for the sum */
        double a0 = v ? 0.3 : 1.1, a1 = v ? -0.2 : 0.4;
        S0[0] = a0; S1[0] = a1;
        for (int i = 0; i < len; i++) {
            S0[i + 1] = 0.5 * sin(S0[i]) * x[i] + 0.25 * S1[i] + 0.5 * x[i];
            S1[i + 1] = 0.5 * S1[i] + 0.5 * x[i] * S0[i + 1];
        }
        /* hand adjoint: (l0, l1) adjoints of the state after step i */
        double w0 = 1.5, w1 = -0.5, l0 = w0, l1 = w1, gx[NMAX];
        if (v) { l0 = 0.0; l1 = 0.0; } /* evolve_sum: the adjoints come from acc */
        for (int i = len - 1; i >= 0; i--) {
            if (v) { l0 += S1[i + 1]; l1 += S0[i + 1]; }
            /* s1' = s1/2 + x s0'/2 */
            double a_s0new = l0 + 0.5 * l1 * x[i], a_s1 = 0.5 * l1;
            gx[i] = 0.5 * l1 * S0[i + 1];
            /* s0' = sin(s0) x/2 + s1/4 + x/2 */
            gx[i] += 0.5 * a_s0new * (sin(S0[i]) + 1.0);
            l0 = 0.5 * a_s0new * cos(S0[i]) * x[i];
            l1 = a_s1 + 0.25 * a_s0new;
        }
        /* tangent recurrence */
        double q0 = 0.0, q1 = 0.0, facc = 0.0;
        for (int i = 0; i < len; i++) {
            q0 = 0.5 * (cos(S0[i]) * q0 * x[i] + (sin(S0[i]) + 1.0) * t[i]) + 0.25 * q1;
            q1 = 0.5 * q1 + 0.5 * (t[i] * S0[i + 1] + x[i] * q0);
            facc += q0 * S1[i + 1] + S0[i + 1] * q1;
        }
        if (v == 0) {
            double s[2] = {a0, a1}, ds[2] = {w0, w1};
            for (int i = 0; i < len; i++) dx[i] = 0.0;
            __enzyme_autodiff((void *)evolve, enzyme_dup, s, ds, enzyme_dup, x, dx, len);
            check("evolve d/ds0", 0, ds[0], l0, TOL);
            check("evolve d/ds1", 1, ds[1], l1, TOL);
            check("evolve primal s0", len, s[0], S0[len], TOL);
            check("evolve primal s1", len, s[1], S1[len], TOL);
            for (int i = 0; i < len; i++) check("evolve d/dx", i, dx[i], gx[i], TOL);
            double ts[2] = {0.0, 0.0};
            s[0] = a0; s[1] = a1;
            __enzyme_fwddiff((void *)evolve, enzyme_dup, s, ts, enzyme_dup, x, t, len);
            check("evolve forward s0", len, ts[0], q0, TOL);
            check("evolve forward s1", len, ts[1], q1, TOL);
        } else {
            for (int i = 0; i < len; i++) dx[i] = 0.0;
            __enzyme_autodiff((void *)evolve_sum, enzyme_dup, x, dx, len);
            for (int i = 0; i < len; i += 3) check("evolve_sum d/dx", i, dx[i], gx[i], TOL);
            check("evolve_sum forward", len, __enzyme_fwddiff((void *)evolve_sum, enzyme_dup, x, t, len), facc, TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
