/* Peak memory of a stencil's gradient vs its primal.
 *   stencil_memory primal N STEPS   |   stencil_memory grad N STEPS
 * Run each under /usr/bin/time -f %M (peak RSS in KiB); see bench/README.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;

double heat(const double *u0, int n, int steps) {
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    memcpy(a, u0, n * sizeof(double));
    for (int s = 0; s < steps; s++) {
        b[0] = a[0];
        b[n - 1] = a[n - 1];
        for (int i = 1; i < n - 1; i++)
            b[i] = a[i] + 0.2 * (a[i - 1] - 2 * a[i] + a[i + 1]) + 0.01 * sin(a[i]);
        double *t = a;
        a = b;
        b = t;
    }
    double e = 0;
    for (int i = 0; i < n; i++) e += a[i] * a[i];
    free(a);
    free(b);
    return e;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int n = atoi(argv[2]), steps = atoi(argv[3]);
    double *u = malloc(n * sizeof(double)), *du = calloc(n, sizeof(double));
    for (int i = 0; i < n; i++) u[i] = sin(0.01 * i);
    double r;
    if (strcmp(argv[1], "grad") == 0) {
        __enzyme_autodiff((void *)heat, enzyme_dup, u, du, enzyme_const, n, enzyme_const, steps);
        r = du[n / 2];
    } else {
        r = heat(u, n, steps);
    }
    printf("%s n=%d steps=%d -> %g\n", argv[1], n, steps, r);
    return 0;
}
