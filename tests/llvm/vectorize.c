/* Loops that the O2/O3 vectorizers turn into vector code (and selects, min/max). */
#include <stdio.h>

#define N 1000
float xs[N], ys[N];
double dx[N], dy[N];
int iv[N];

__attribute__((noinline)) void saxpy(float a, float *restrict y, const float *restrict x, int n) {
    for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}

__attribute__((noinline)) double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

__attribute__((noinline)) int clamp_sum(const int *v, int n, int lo, int hi) {
    int s = 0;
    for (int i = 0; i < n; i++) {
        int x = v[i] < lo ? lo : v[i];
        s += x > hi ? hi : x;
    }
    return s;
}

__attribute__((noinline)) float maxabs(const float *v, int n) {
    float m = 0;
    for (int i = 0; i < n; i++) {
        float a = v[i] < 0 ? -v[i] : v[i];
        if (a > m) m = a;
    }
    return m;
}

int main(void) {
    for (int i = 0; i < N; i++) {
        xs[i] = (i % 13) * 0.25f - 1.0f;
        ys[i] = (i % 7) * 0.5f;
        dx[i] = i * 0.001;
        dy[i] = (N - i) * 0.002;
        iv[i] = (i * 37) % 101 - 50;
    }
    saxpy(1.5f, ys, xs, N);
    float ysum = 0;
    for (int i = 0; i < N; i++) ysum += ys[i];
    printf("%.9g %.17g %d %.9g\n", ysum, dot(dx, dy, N), clamp_sum(iv, N, -20, 30), maxabs(xs, N));
    return 0;
}
