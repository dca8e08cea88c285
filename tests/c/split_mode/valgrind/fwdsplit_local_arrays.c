// Split forward mode (__enzyme_fwdsplit), issue 24 item 1, under valgrind: a function
// whose local arrays are indexed by loop counters and constant tables. The tangent
// function fills its own copies of them again (their stores are kept with the loads),
// never the augmented pass's: that frame is gone. __enzyme_augmentfwd runs deep in the
// stack and __enzyme_fwdsplit near its top, so an access to the old frame would be
// below the stack pointer, which valgrind reports.
#include <math.h>
#include <stdio.h>
#include <string.h>

extern int enzyme_dup, enzyme_const;
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_fwdsplit(void *, ...);
extern void __enzyme_fwddiff(void *, ...);

// S = log(det C) C^-1 + (I - C^-1) for C = I + 2 E (E symmetric, in Voigt order)
void stress(double *S, const double *E) {
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
    static const int vi[6] = {0, 1, 2, 1, 0, 0}, vj[6] = {0, 1, 2, 2, 2, 1};
    for (int m = 0; m < 6; m++) {
        double cinv = A[vi[m]][vj[m]] / det;
        S[m] = log(det) * cinv + ((vi[m] == vj[m]) - cinv);
    }
}

static double E0[6] = {0.11, -0.05, 0.2, 0.03, -0.07, 0.09};
static double S[6];

// the augmented pass, `depth` frames down
__attribute__((noinline)) void *deep(int depth) {
    volatile char pad[512];
    pad[0] = (char)depth;
    if (depth > 0) return deep(depth - 1);
    return __enzyme_augmentfwd((void *)stress, enzyme_dup, S, (double *)NULL, enzyme_dup, E0, (double *)NULL);
}

int main(void) {
    void *tape = deep(40);
    double E[6], dE[6] = {1, 0.5, -0.25, 2, -1, 0.75}, dS[6], R[6], dR[6];
    memcpy(E, E0, sizeof E);
    memset(E0, 0, sizeof E0);  // clobbered
    __enzyme_fwdsplit((void *)stress, enzyme_dup, (double *)NULL, dS, enzyme_dup, (double *)NULL, dE, tape);
    __enzyme_fwddiff((void *)stress, enzyme_dup, R, dR, enzyme_dup, E, dE);
    int failures = 0;
    for (int m = 0; m < 6; m++)
        if (!(fabs(dS[m] - dR[m]) <= 1e-12 * (1 + fabs(dR[m])))) {
            printf("FAIL dS[%d]: %.15g vs %.15g\n", m, dS[m], dR[m]);
            failures++;
        }
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
