/* The driver of the zymase cc and plain clang builds (bench/vs_enzyme.py): appended to a
   program after its source. Usage: PROG n reps grad x.bin out.bin; reads x (n doubles),
   writes the objective, the 2 reps call times and the gradient (1 + 2 reps + n doubles). */
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 6) return 2;
    int n = atoi(argv[1]), reps = atoi(argv[2]), grad = atoi(argv[3]);
    double *x = (double *)malloc(sizeof(double) * (size_t)n);
    double *res = (double *)calloc(1 + 2 * (size_t)reps + (size_t)n, sizeof(double));
    FILE *f = fopen(argv[4], "rb");
    if (!f || fread(x, sizeof(double), (size_t)n, f) != (size_t)n) return 3;
    fclose(f);
    vs_time(n, reps, grad, x, res + 1 + 2 * reps, res + 1, res);
    f = fopen(argv[5], "wb");
    if (!f) return 4;
    fwrite(res, sizeof(double), 1 + 2 * (size_t)reps + (size_t)n, f);
    fclose(f);
    return 0;
}
