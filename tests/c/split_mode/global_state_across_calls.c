// Split reverse mode of a function that carries state in a global from one call to the
// next (G <- G / 2 + x): the global's value at __enzyme_augmentfwd is a constant for the
// reverse sweep that follows. The global's shadow used to keep the adjoint of that value
// from the previous pair of calls, which the next reverse sweep added in (every pair after
// the first silently wrong).
#include <math.h>
#include <stdio.h>

extern int enzyme_dup, enzyme_const;
typedef struct { void *tape; double value; } augmented;
extern augmented __enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);

#define N 4
static double G[N];

static double smoothed_dot(const double *x, int n) {
    for (int i = 0; i < n; i++)
        G[i] = G[i] * 0.5 + x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += G[i] * x[i];
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3, failures = 0; /* 4 */
    double x[N];
    for (int i = 0; i < n; i++)
        x[i] = 0.3 + 0.4 * sin(1.1 * i + 0.2);
    for (int call = 0; call < 3; call++) {
        double g0[N], dx[N] = {0};
        for (int i = 0; i < n; i++)
            g0[i] = G[i];
        augmented a = __enzyme_augmentfwd((void *)smoothed_dot, enzyme_dup, x, dx, enzyme_const, n);
        __enzyme_reverse((void *)smoothed_dot, enzyme_dup, x, dx, enzyme_const, n, 1.0, a.tape);
        for (int i = 0; i < n; i++) {
            double want = 0.5 * g0[i] + 2.0 * x[i]; /* d/dx_i sum (G0_j / 2 + x_j) x_j */
            int ok = fabs(dx[i] - want) <= 1e-12 * fmax(1.0, fabs(want));
            failures += !ok;
            printf("%-4s pair %d d/dx%d got %.17g want %.17g\n", ok ? "ok" : "FAIL", call, i, dx[i], want);
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
