/* A time loop that walks local arrays backwards from their end pointers and swaps two of
   them each step, checkpointed under a tape limit (tests/test_c_checkpoint.py). On the
   stack the end of one array can be the start of the next (at -O2 a and b lie side by
   side, the int array k taking the place a shadow would): after each restore the runtime
   rebuilds the carried pointers' shadows from the objects they point into or just past,
   and took a + 4 for b, its shadow for b's (d/dx 0.057 for 0.720 at -O2, with or without
   preopt, before zymase padded the stored-to stack objects of a checkpointed loop).
   Checked against central finite differences at an odd and an even trip count.
   Usage: end_pointers (exit status: the failures) */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const;

double ends(double x, int nsteps) {
    double a[4], b[4];
    int k[4];
    for (int i = 0; i < 4; i++) {
        a[i] = x * (i + 1);
        b[i] = x / (i + 2);
        k[i] = i;
    }
    double *pe = a + 4, *qe = b + 4;
    int *ke = k + 4;
    for (int s = 0; s < nsteps; s++) {
        for (int i = 1; i <= 4; i++) {
            qe[-i] = 0.5 * (qe[-i] + pe[-i]) + 0.1 * sin(pe[-i] * pe[-(i % 4) - 1]) * ke[-i];
            ke[-i] = (ke[-i] + 1) & 3;
        }
        double *t = pe;
        pe = qe;
        qe = t;
    }
    return pe[-1] * pe[-2] + pe[-4];
}

int main(void) {
    const double x = 0.7, h = 1e-6;
    int failures = 0;
    for (int n = 11; n <= 12; n++) {
        double g = __enzyme_autodiff((void *)ends, x, enzyme_const, n);
        double fd = (ends(x + h, n) - ends(x - h, n)) / (2 * h);
        int bad = !(fabs(g - fd) <= 1e-6 * (1 + fabs(fd)));
        printf("%s nsteps %d d/dx %.12g fd %.12g\n", bad ? "FAIL" : "ok", n, g, fd);
        failures += bad;
    }
    return failures;
}
