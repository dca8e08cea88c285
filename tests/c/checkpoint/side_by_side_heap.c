/* Two malloc'd buffers side by side (side_by_side_malloc.c's allocator puts a and b next
   to each other and their shadows apart), walked backwards from their end pointers, which
   a checkpointed time loop swaps each step (tests/test_c_checkpoint.py): a + 4 is also b's
   start, and the runtime cannot tell which object's shadow a pointer there needs (already
   b itself, in the checkpointed loop that fills the buffers). Refused at run time with one
   error line (abort) rather than guessed (the guess gave d/dx 0.050 for 1.385 at -O2). Checked against central finite differences should it run.
   Usage: side_by_side_heap (exit status: the failures) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const;
double ends(double x, int nsteps) {
    double *a = malloc(4 * sizeof(double)), *b = malloc(4 * sizeof(double));
    for (int i = 0; i < 4; i++) {
        a[i] = x * (i + 1);
        b[i] = x / (i + 2);
    }
    double *pe = a + 4, *qe = b + 4;
    for (int s = 0; s < nsteps; s++) {
        for (int i = 1; i <= 4; i++)
            qe[-i] = 0.5 * (qe[-i] + pe[-i]) + 0.1 * sin(pe[-i] * pe[-(i % 4) - 1]);
        double *t = pe;
        pe = qe;
        qe = t;
    }
    double out = pe[-1] * pe[-2] + pe[-4];
    free(a);
    free(b);
    return out;
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
