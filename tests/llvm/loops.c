/* Nested loops over arrays: matrix multiply, prefix sums, reductions. */
#include <stdio.h>

#define N 24

static double a[N][N], b[N][N], c[N][N];

__attribute__((noinline)) void matmul(int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += a[i][k] * b[k][j];
            c[i][j] = s;
        }
}

__attribute__((noinline)) long prefix(int *v, int n) {
    long total = 0;
    for (int i = 1; i < n; i++) v[i] += v[i - 1];
    for (int i = 0; i < n; i++) total += v[i] % 97;
    return total;
}

__attribute__((noinline)) double find_max(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = (i * 3 + j) % 7 - 2.5;
            b[i][j] = (i + 2 * j) % 5 * 0.25;
        }
    matmul(N);
    double trace = 0;
    for (int i = 0; i < N; i++) trace += c[i][i];
    int v[100];
    for (int i = 0; i < 100; i++) v[i] = i * i - 50;
    printf("%.17g %ld %.17g\n", trace, prefix(v, 100), find_max(&c[0][0], N * N));
    int count = 0;
    while (count * count < 5000) count++;
    do { count -= 3; } while (count > 10);
    printf("%d\n", count);
    return 0;
}
