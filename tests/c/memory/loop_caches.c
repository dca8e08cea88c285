/* Loops whose values reverse mode must keep, in every shape the tape treats differently: nests of
   counted loops (one indexed cache for the whole nest), a triangular nest (inner bounds from the outer
   induction variable), loops counting down or by 2 or up to an inclusive bound, a pointer induction
   variable, a loop with zero iterations, a loop left early by a data-dependent break, a while loop
   whose trip count is not known before it runs (growing stack) with a counted loop inside it, and a
   recursive function (split mode). Every function overwrites memory it reads, so the values cannot be
   re-read in the reverse sweep; each gradient is checked against central finite differences. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define FDTOL 1e-6
#define NMAX 16

/* S sweeps of a nonlinear in-place update: a nest of two counted loops */
static double sweeps(double *u, int n, int steps) {
    for (int s = 0; s < steps; s++)
        for (int i = 1; i < n; i++)
            u[i] = u[i] + 0.3 * sin(u[i - 1]) * u[i];
    double e = 0.0;
    for (int i = 0; i < n; i++) e += u[i] * u[i];
    return e;
}

/* triangular nest: the inner loop starts at the outer index + 1 (no iterations when j = n - 1) */
static double triangular(double *y, int n, int unused) {
    (void)unused;
    for (int j = 0; j < n; j++)
        for (int i = j + 1; i < n; i++)
            y[i] = y[i] * cos(y[j]) + 0.1 * y[j] * y[i];
    double e = 0.0;
    for (int i = 0; i < n; i++) e += y[i];
    return e;
}

/* down-counting, step-2 and inclusive loops, and a pointer induction variable */
static double strides(double *x, int n, int unused) {
    (void)unused;
    for (int i = n - 1; i >= 1; i--) x[i] = x[i] * x[i - 1] + 0.5 * x[i];
    for (int i = 0; i < n; i += 2) x[i] = exp(0.2 * x[i]) * x[i];
    for (int i = 1; i <= n - 1; i++) x[i] = x[i] * x[i] - 0.25 * x[i - 1];
    double e = 0.0;
    for (double *p = x; p < x + n; p++) { *p = *p * *p * 0.5; e += *p; }
    return e;
}

/* an outer loop whose inner loop runs m times; m = 0 leaves the inner loop empty */
static double zero_trip(double *x, int n, int m) {
    double e = 0.0;
    for (int i = 0; i < n; i++) {
        double t = x[i];
        for (int k = 0; k < m; k++) { t = t * t * 0.5 + x[i]; x[i] = sin(t); }
        e += t * x[i];
    }
    return e;
}

/* a counted loop left early by a data-dependent break */
static double early_exit(double *x, int n, int unused) {
    (void)unused;
    double acc = 1.0;
    for (int i = 0; i < n; i++) {
        if (x[i] > 1.5) break;
        acc = acc * (1.0 + 0.5 * x[i]);
        x[i] = acc * x[i];
    }
    return acc + x[0];
}

/* a while loop (trip count known only when it ends) around a counted loop */
static double while_loop(double *x, int n, int unused) {
    (void)unused;
    double r = 1.0;
    int rounds = 0;
    while (r < 20.0 && rounds < 50) {
        for (int i = 0; i < n; i++) {
            x[i] = x[i] * 1.1 + 0.05 * sin(x[i]);
            r += 0.1 * x[i] * x[i];
        }
        rounds++;
    }
    return r;
}

/* recursion with a loop at each level (split mode: the callee's values go on the global tape) */
static double recursive(double *x, int n, int unused) {
    (void)unused;
    if (n <= 1) return x[0] * x[0];
    for (int i = 0; i < n; i++) x[i] = x[i] * cos(x[(i + 1) % n]);
    return x[n - 1] + recursive(x, n - 1, 0);
}

typedef double (*objective)(double *, int, int);

/* dx (the gradient at x0, from reverse mode) against central differences of f */
static void check_fd(const char *name, objective f, const double *x0, const double *dx, int n, int arg) {
    double xp[NMAX], xm[NMAX];
    for (int k = 0; k < n; k++) {
        double h = 1e-6 * (fabs(x0[k]) > 1.0 ? fabs(x0[k]) : 1.0);
        memcpy(xp, x0, sizeof(double) * (size_t)n);
        memcpy(xm, x0, sizeof(double) * (size_t)n);
        xp[k] += h;
        xm[k] -= h;
        double fd = (f(xp, n, arg) - f(xm, n, arg)) / (2.0 * h);
        check(name, k, dx[k], fd, FDTOL);
    }
}

/* __enzyme_autodiff needs the function itself, hence a macro */
#define GRADIENT_VS_FD(name, f, x0, n, arg)                                                     \
    do {                                                                                        \
        double x_[NMAX], dx_[NMAX];                                                             \
        memcpy(x_, x0, sizeof(double) * (size_t)(n));                                           \
        memset(dx_, 0, sizeof dx_);                                                             \
        __enzyme_autodiff((void *)f, enzyme_dup, x_, dx_, enzyme_const, n, enzyme_const, arg); \
        check_fd(name, f, x0, dx_, n, arg);                                                     \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8; /* 9: run-time sizes */
    double x0[NMAX];
    for (int i = 0; i < n; i++) x0[i] = 0.3 + 0.1 * i - 0.02 * i * i / (1.0 + i);
    GRADIENT_VS_FD("sweeps (nest)", sweeps, x0, n, 7);
    GRADIENT_VS_FD("triangular nest", triangular, x0, n, 0);
    GRADIENT_VS_FD("strides", strides, x0, n, 0);
    GRADIENT_VS_FD("zero_trip m=3", zero_trip, x0, n, 3);
    GRADIENT_VS_FD("zero_trip m=0", zero_trip, x0, n, argc - 1);
    GRADIENT_VS_FD("early_exit", early_exit, x0, n, 0);
    double big[NMAX];
    for (int i = 0; i < n; i++) big[i] = x0[i] + (i == 6 ? 1.5 : 0.0);
    GRADIENT_VS_FD("early_exit (breaks)", early_exit, big, n, 0);
    GRADIENT_VS_FD("while_loop", while_loop, x0, n, 0);
    GRADIENT_VS_FD("recursive", recursive, x0, n, 0);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
