/* A time loop that walks local arrays backwards from their end pointers and swaps two of
   them each step, checkpointed under a tape limit (tests/test_c_checkpoint.py). On the
   stack the end of one array can be the start of the next (at -O2 a and b lie side by
   side, the int array k taking the place a shadow would): after each restore the runtime
   rebuilds the carried pointers' shadows from the objects they point into or just past,
   and took a + 4 for b, its shadow for b's (d/dx 0.057 for 0.720 at -O2, 0.012 without
   preopt, for both functions, before zymase gave the stored-to stack objects of a
   checkpointed loop room after them). Checked against central finite differences at an
   odd and an even trip count. Usage: end_pointers (exit status: the failures) */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const;

/* the same loop over arrays declared by DECLARE (fixed size, or a run-time size: zymase
   pads an `alloca T` and an `alloca T, n` differently) */
#define ENDS(name, DECLARE)                                                                  \
    double name(double x, int nsteps) {                                                      \
        int m = 4 + (nsteps < 0);                                                            \
        DECLARE;                                                                             \
        int k[4];                                                                            \
        (void)m;                                                                             \
        for (int i = 0; i < 4; i++) {                                                        \
            a[i] = x * (i + 1);                                                              \
            b[i] = x / (i + 2);                                                              \
            k[i] = i;                                                                        \
        }                                                                                    \
        double *pe = a + 4, *qe = b + 4;                                                     \
        int *ke = k + 4;                                                                     \
        for (int s = 0; s < nsteps; s++) {                                                   \
            for (int i = 1; i <= 4; i++) {                                                   \
                qe[-i] = 0.5 * (qe[-i] + pe[-i]) + 0.1 * sin(pe[-i] * pe[-(i % 4) - 1]) * ke[-i]; \
                ke[-i] = (ke[-i] + 1) & 3;                                                   \
            }                                                                                \
            double *t = pe;                                                                  \
            pe = qe;                                                                         \
            qe = t;                                                                          \
        }                                                                                    \
        return pe[-1] * pe[-2] + pe[-4];                                                     \
    }

ENDS(ends, double a[4]; double b[4])
ENDS(ends_vla, double a[m]; double b[4])

/* each gradient in a frame of its own (the derivative is inlined where it is called, and
   the stack layout that puts a and b side by side is that frame's) */
__attribute__((noinline)) static double grad_ends(double x, int n) {
    return __enzyme_autodiff((void *)ends, x, enzyme_const, n);
}
__attribute__((noinline)) static double grad_ends_vla(double x, int n) {
    return __enzyme_autodiff((void *)ends_vla, x, enzyme_const, n);
}

int main(void) {
    const double x = 0.7, h = 1e-6;
    int failures = 0;
    for (int f = 0; f < 2; f++)
        for (int n = 11; n <= 12; n++) {
            double g = f ? grad_ends_vla(x, n) : grad_ends(x, n);
            double (*fn)(double, int) = f ? ends_vla : ends;
            double fd = (fn(x + h, n) - fn(x - h, n)) / (2 * h);
            int bad = !(fabs(g - fd) <= 1e-6 * (1 + fabs(fd)));
            printf("%s %s nsteps %d d/dx %.12g fd %.12g\n", bad ? "FAIL" : "ok", f ? "ends_vla" : "ends", n, g, fd);
            failures += bad;
        }
    return failures;
}
