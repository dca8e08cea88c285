/* 1-D advection-diffusion stencil on two malloc'd buffers swapped by pointer each step (steps known at run time): linear and reaction (nonlinear) versions, reverse against the transposed stencil / a hand adjoint, forward against a tangent recurrence. */
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

/* u_new[i] = u[i] + RL u[i-1] - (RL + RR) u[i] + RR u[i+1] (+ DT u (1 - u)); both ends fixed */
#define RL 0.3
#define RR 0.15
#define DT 0.2

static double heat(const double *u0, const double *w, int n, int steps, int react) {
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) a[i] = u0[i];
    for (int s = 0; s < steps; s++) {
        b[0] = a[0];
        b[n - 1] = a[n - 1];
        for (int i = 1; i < n - 1; i++) {
            b[i] = a[i] + RL * a[i - 1] - (RL + RR) * a[i] + RR * a[i + 1];
            if (react)
                b[i] += DT * a[i] * (1.0 - a[i]);
        }
        double *t = a;
        a = b;
        b = t;
    }
    double r = 0.0;
    for (int i = 0; i < n; i++) r += w[i] * a[i];
    free(a);
    free(b);
    return r;
}

#define NMAX 32
#define SMAX 64

/* reference trajectory, a gather loop of its own; traj[s] is the state before step s */
static void trajectory(const double *u0, int n, int steps, int react, double traj[][NMAX]) {
    for (int i = 0; i < n; i++) traj[0][i] = u0[i];
    for (int s = 0; s < steps; s++) {
        const double *a = traj[s];
        double *b = traj[s + 1];
        for (int i = 0; i < n; i++) {
            b[i] = a[i];
            if (i > 0 && i < n - 1)
                b[i] += RL * (a[i - 1] - a[i]) + RR * (a[i + 1] - a[i]) + (react ? DT * a[i] * (1.0 - a[i]) : 0.0);
        }
    }
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8, steps = 4 * argc + 7; /* 9 cells, 11 steps */
    static double traj[SMAX + 1][NMAX];
    double u0[NMAX], w[NMAX], du0[NMAX], dw[NMAX], t[NMAX], lam[NMAX], nl[NMAX], tan_[NMAX], tn[NMAX];
    for (int i = 0; i < n; i++) {
        u0[i] = 0.5 + 0.4 * sin(0.8 * i);
        w[i] = 1.0 + 0.1 * i;
        t[i] = cos(0.5 * i);
    }
    for (int react = 0; react < 2; react++) {
        trajectory(u0, n, steps, react, traj);
        /* hand adjoint: lam = J_0^T ... J_{steps-1}^T w, scattering each row of the stencil */
        for (int i = 0; i < n; i++) lam[i] = w[i];
        for (int s = steps - 1; s >= 0; s--) {
            const double *a = traj[s];
            for (int i = 0; i < n; i++) nl[i] = 0.0;
            for (int i = 0; i < n; i++) {
                if (i == 0 || i == n - 1) { nl[i] += lam[i]; continue; }
                nl[i - 1] += RL * lam[i];
                nl[i + 1] += RR * lam[i];
                nl[i] += (1.0 - RL - RR + (react ? DT * (1.0 - 2.0 * a[i]) : 0.0)) * lam[i];
            }
            for (int i = 0; i < n; i++) lam[i] = nl[i];
        }
        /* tangent recurrence for the forward check */
        double fwd = 0.0;
        for (int i = 0; i < n; i++) tan_[i] = t[i];
        for (int s = 0; s < steps; s++) {
            const double *a = traj[s];
            for (int i = 0; i < n; i++) {
                tn[i] = tan_[i];
                if (i > 0 && i < n - 1)
                    tn[i] += RL * (tan_[i - 1] - tan_[i]) + RR * (tan_[i + 1] - tan_[i]) + (react ? DT * (1.0 - 2.0 * a[i]) * tan_[i] : 0.0);
            }
            for (int i = 0; i < n; i++) tan_[i] = tn[i];
        }
        for (int i = 0; i < n; i++) fwd += w[i] * tan_[i];

        for (int i = 0; i < n; i++) du0[i] = dw[i] = 0.0;
        __enzyme_autodiff((void *)heat, enzyme_dup, u0, du0, enzyme_dup, w, dw, n, steps, react);
        for (int i = 0; i < n; i++) {
            check(react ? "reaction du0 (adjoint)" : "heat du0 (transposed stencil)", i, du0[i], lam[i], TOL);
            check(react ? "reaction dw = final state" : "heat dw = final state", i, dw[i], traj[steps][i], TOL);
        }
        for (int i = 0; i < n; i++) du0[i] = 0.0;
        __enzyme_autodiff((void *)heat, enzyme_dup, u0, du0, enzyme_const, w, n, steps, react);
        for (int i = 0; i < n; i++)
            check(react ? "reaction du0 (w const)" : "heat du0 (w const)", i, du0[i], lam[i], TOL);
        check(react ? "reaction forward" : "heat forward", steps,
              __enzyme_fwddiff((void *)heat, enzyme_dup, u0, t, enzyme_const, w, n, steps, react), fwd, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
