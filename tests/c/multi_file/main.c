/* A program in three files (main.c, model.c, physics.c), built together:
 * zymase cc main.c model.c physics.c. The differentiated function, loss, is defined in
 * model.c and calls a function and reads a global defined in physics.c; each file has
 * its own static helper named square. Each file alone is refused (only a declaration of
 * loss in main.c; only a declaration of energy in model.c): the files are differentiated
 * as one program. Reverse and forward mode against central differences; the size comes
 * from argc, so nothing is folded. Prints "N failures". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
double __enzyme_fwddiff(void *, ...);

double loss(const double *x, int n);
extern double stiffness;

static double square(double v) { return v * v * 0.5; } /* not model.c's square */

int main(int argc, char **argv) {
    (void)argv;
    int n = 4 + argc, failures = 0;
    double *x = malloc(n * sizeof(double)), *dx = calloc(n, sizeof(double)), *t = calloc(n, sizeof(double));
    for (int i = 0; i < n; i++) x[i] = 0.3 + 0.2 * i - 0.03 * i * i + square(0.1 * i);
    stiffness = 1.5;
    __enzyme_autodiff((void *)loss, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        double h = 1e-6, keep = x[i];
        x[i] = keep + h; double up = loss(x, n);
        x[i] = keep - h; double down = loss(x, n);
        x[i] = keep;
        double fd = (up - down) / (2 * h);
        t[i] = 1.0;
        double fwd = __enzyme_fwddiff((void *)loss, enzyme_dup, x, t, enzyme_const, n);
        t[i] = 0.0;
        if (fabs(dx[i] - fd) > 1e-6 * fmax(1.0, fabs(fd)) || fabs(fwd - fd) > 1e-6 * fmax(1.0, fabs(fd))) {
            printf("x[%d]: reverse %.12g forward %.12g central difference %.12g\n", i, dx[i], fwd, fd);
            failures++;
        }
    }
    printf("%d failures\n", failures);
    free(x); free(dx); free(t);
    return failures != 0;
}
