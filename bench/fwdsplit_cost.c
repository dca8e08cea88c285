// Split forward mode's cost, as a libCEED-style user pays it: a nonlinear stress at
// each of n quadrature points is linearized once (__enzyme_augmentfwd, one tape per point
// in the caller's buffers) and the linearization is applied many times
// (__enzyme_fwdsplit with enzyme_nofree, as a Krylov solver would), against applying
// __enzyme_fwddiff each time (which recomputes the primal). Prints, per point, the times
// of the primal, one __enzyme_fwddiff application, the augmented pass and one
// __enzyme_fwdsplit application (the best of `reps` rounds, the variants alternating),
// and the tape's bytes (with ZYMASE_TAPE_STATS=1 at compile time).
//
//   ZYMASE_TAPE_STATS=1 zymase cc -O2 bench/fwdsplit_cost.c -o fwdsplit_cost -lm
//   ./fwdsplit_cost 20000 10
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern int enzyme_dup, enzyme_const, enzyme_allocated, enzyme_tape, enzyme_nofree;
extern int __enzyme_augmentsize(void *, ...);
extern void __enzyme_augmentfwd(void *, ...);
extern void __enzyme_fwdsplit(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
long __zymase_tape_bytes __attribute__((weak));
volatile double sink;

// Second Piola-Kirchhoff stress of a compressible neo-Hookean material from the Green
// strain E (Voigt order xx yy zz yz xz xy): S = lambda log(J) C^-1 + mu (I - C^-1).
void stress(double *S, const double *E, double lambda, double mu) {
    double C[3][3] = {{1 + 2 * E[0], 2 * E[5], 2 * E[4]},
                      {2 * E[5], 1 + 2 * E[1], 2 * E[3]},
                      {2 * E[4], 2 * E[3], 1 + 2 * E[2]}};
    double A[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            A[j][i] = C[i1][j1] * C[i2][j2] - C[i1][j2] * C[i2][j1];
        }
    double det = C[0][0] * A[0][0] + C[0][1] * A[1][0] + C[0][2] * A[2][0];
    double logJ = 0.5 * log(det);
    const int vi[6] = {0, 1, 2, 1, 0, 0}, vj[6] = {0, 1, 2, 2, 2, 1};
    for (int m = 0; m < 6; m++) {
        double cinv = A[vi[m]][vj[m]] / det;
        S[m] = lambda * logJ * cinv + mu * ((vi[m] == vj[m]) - cinv);
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 20000, reps = argc > 2 ? atoi(argv[2]) : 10;
    double lambda = 0.6, mu = 0.4;
    double *E = malloc(6 * n * sizeof(double)), *dE = malloc(6 * n * sizeof(double));
    double *S = malloc(6 * n * sizeof(double)), *dS = malloc(6 * n * sizeof(double));
    for (int k = 0; k < 6 * n; k++) { E[k] = 0.05 * sin(0.37 * k); dE[k] = cos(0.11 * k); }
    int size = __enzyme_augmentsize((void *)stress, enzyme_dup, enzyme_dup, enzyme_const, enzyme_const);
    char *tapes = malloc((size_t)size * n);
    long before = &__zymase_tape_bytes ? __zymase_tape_bytes : 0;
    double t_aug = now();
    for (int q = 0; q < n; q++)
        __enzyme_augmentfwd((void *)stress, enzyme_nofree, enzyme_allocated, size, enzyme_tape, tapes + (size_t)q * size,
                            enzyme_dup, S + 6 * q, (double *)NULL, enzyme_dup, E + 6 * q, (double *)NULL,
                            enzyme_const, lambda, enzyme_const, mu);
    t_aug = now() - t_aug;
    long taped = (&__zymase_tape_bytes ? __zymase_tape_bytes : 0) - before;
    double best[3] = {1e30, 1e30, 1e30}, check = 0;
    for (int r = 0; r < reps; r++) {
        double t = now();
        for (int q = 0; q < n; q++) stress(S + 6 * q, E + 6 * q, lambda, mu);
        t = now() - t;
        for (int k = 0; k < 6 * n; k++) sink += S[k];  // the primal's results are used
        if (t < best[0]) best[0] = t;
        t = now();
        for (int q = 0; q < n; q++)
            __enzyme_fwddiff((void *)stress, enzyme_dup, S + 6 * q, dS + 6 * q, enzyme_dup, E + 6 * q, dE + 6 * q,
                             enzyme_const, lambda, enzyme_const, mu);
        t = now() - t;
        if (t < best[1]) best[1] = t;
        for (int k = 0; k < 6 * n; k++) check += dS[k];
        t = now();
        for (int q = 0; q < n; q++)
            __enzyme_fwdsplit((void *)stress, enzyme_nofree, enzyme_allocated, size, enzyme_tape,
                              tapes + (size_t)q * size, enzyme_dup, (double *)NULL, dS + 6 * q, enzyme_dup,
                              (double *)NULL, dE + 6 * q, enzyme_const, lambda, enzyme_const, mu);
        t = now() - t;
        if (t < best[2]) best[2] = t;
        for (int k = 0; k < 6 * n; k++) check -= dS[k];
    }
    printf("n=%d, per point: primal %.1f ns, fwddiff %.1f ns, augmentfwd %.1f ns, fwdsplit %.1f ns; "
           "fwdsplit/fwddiff %.2f, fwdsplit/primal %.2f; tape %ld bytes per point; |fwddiff-fwdsplit| sum %.2g\n",
           n, 1e9 * best[0] / n, 1e9 * best[1] / n, 1e9 * t_aug / n, 1e9 * best[2] / n, best[2] / best[1],
           best[2] / best[0], taped / n, fabs(check));
    return 0;
}
