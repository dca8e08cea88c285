// Registered derivatives of a function that is only declared in the differentiated
// file (defined in library.c), issue 24 item 2: Enzyme's way to give derivatives to
// library functions. Reverse (augment/gradient) and forward (fwd) registrations, the
// function called twice per evaluation and in a loop.
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

double norm2(const double *x, int n);

static int calls = 0;
double norm2_augment(const double *x, const double *dx, int n) { (void)dx; calls++; return norm2(x, n); }
void norm2_gradient(const double *x, double *dx, int n, double d) {
    calls++;
    double r = norm2(x, n);
    for (int i = 0; i < n; i++) dx[i] += d * x[i] / r;
}
void *__enzyme_register_gradient_norm2[3] = {(void *)norm2, (void *)norm2_augment, (void *)norm2_gradient};

double norm2_fwd(const double *x, const double *dx, int n) {
    calls++;
    double r = norm2(x, n), t = 0;
    for (int i = 0; i < n; i++) t += x[i] * dx[i];
    return t / r;
}
void *__enzyme_register_derivative_norm2[2] = {(void *)norm2, (void *)norm2_fwd};

double energy(const double *x, int n, int steps) {
    double e = 0;
    for (int s = 0; s < steps; s++) e += norm2(x, n) * norm2(x, n) / (s + 1);
    return e;
}

int main(void) {
    double x[3] = {1, 2, 3}, dx[3] = {0, 0, 0}, t[3] = {0.5, -1, 2};
    int steps = 4;
    double h = 0; // sum 1/(s+1)
    for (int s = 0; s < steps; s++) h += 1.0 / (s + 1);
    __enzyme_autodiff((void *)energy, enzyme_dup, x, dx, enzyme_const, 3, enzyme_const, steps);
    int failures = 0;
    for (int i = 0; i < 3; i++)
        if (fabs(dx[i] - 2 * x[i] * h) > 1e-12) { printf("FAIL dx[%d] = %g\n", i, dx[i]); failures++; }
    if (calls != 4 * steps) { printf("FAIL calls %d\n", calls); failures++; }
    double tf = __enzyme_fwddiff((void *)energy, enzyme_dup, x, t, enzyme_const, 3, enzyme_const, steps);
    double want = 2 * (x[0] * t[0] + x[1] * t[1] + x[2] * t[2]) * h;
    if (fabs(tf - want) > 1e-12) { printf("FAIL fwd %g vs %g\n", tf, want); failures++; }
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
