/* Function pointers: tables, callbacks, qsort comparators, indirect calls. */
#include <stdio.h>
#include <stdlib.h>

typedef double (*unary)(double);

static double twice(double x) { return 2 * x; }
static double square(double x) { return x * x; }
static double negate(double x) { return -x; }

static unary table[] = {twice, square, negate};

__attribute__((noinline)) double apply_all(double x, unary *fs, int n) {
    for (int i = 0; i < n; i++) x = fs[i](x) + 0.5;
    return x;
}

static int cmp(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) unary pick(int k) { return table[k % 3]; }

int main(int argc, char **argv) {
    (void)argv;
    int v[10] = {5, -3, 9, 0, 12, 7, -8, 3, 3, 1};
    qsort(v, 10, sizeof v[0], cmp);
    double r = apply_all(1.5, table, 3);
    unary f = pick(argc + 1);
    printf("%.17g %.17g", r, f(3.25));
    for (int i = 0; i < 10; i++) printf(" %d", v[i]);
    printf("\n");
    return 0;
}
