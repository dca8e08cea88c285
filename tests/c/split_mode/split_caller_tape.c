// Split mode with the tape in the caller's memory, issue 24 item 1:
// enzyme_allocated, size, enzyme_tape, buffer on both calls; the size from
// __enzyme_augmentsize (a run-time value) or a constant; a buffer reused for many
// forward/reverse pairs.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern int enzyme_dup, enzyme_const, enzyme_allocated, enzyme_tape;
extern void __enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);
extern int __enzyme_augmentsize(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-9 * (1 + fabs(want))) {
        printf("FAIL %s: got %.15g want %.15g\n", what, got, want);
        failures++;
    }
}

// v[0] = x0^2 + 3 x1 + 5; v[1] = x0 x1 + 3 x2 x1; v[2] = x2^3 (no loop: a short tape)
void residual(double *v, const double *x) {
    v[0] = x[0] * x[0] + 3 * x[1] + 5;
    v[1] = x[0] * x[1] + 3 * x[2] * x[1];
    v[2] = x[2] * x[2] * x[2];
}

// a loop: the tape grows past the 128 bytes kept inline
void smooth(double *x, int n) {
    for (int i = 1; i < n; i++) x[i] = x[i] * tanh(x[i - 1]);
}

int main(void) {
    int size = __enzyme_augmentsize((void *)residual, enzyme_dup, enzyme_dup);
    if (size <= 0) { printf("FAIL size %d\n", size); return 1; }
    void *data = malloc((size_t)size);
    double x[3] = {1.5, -0.5, 2.0}, dx[3] = {0, 0, 0}, v[3], dv[3] = {1, 10, 100};
    __enzyme_augmentfwd((void *)residual, enzyme_allocated, size, enzyme_tape, data, enzyme_dup, v, dv,
                        enzyme_dup, x, dx);
    check("v0", v[0], 1.5 * 1.5 - 1.5 + 5);
    x[0] = x[1] = x[2] = 0;  // clobbered
    __enzyme_reverse((void *)residual, enzyme_allocated, size, enzyme_tape, data, enzyme_dup, v, dv,
                     enzyme_dup, x, dx);
    check("dx0", dx[0], 1 * 2 * 1.5 + 10 * -0.5);
    check("dx1", dx[1], 1 * 3 + 10 * (1.5 + 3 * 2.0));
    check("dx2", dx[2], 10 * 3 * -0.5 + 100 * 3 * 2.0 * 2.0);
    free(data);

    char buffer[64];  // a constant size, reused
    for (int round = 0; round < 3; round++) {
        enum { N = 40 };
        double y[N], dy[N], y0[N];
        for (int i = 0; i < N; i++) { y0[i] = y[i] = 0.5 + 0.01 * i + round; dy[i] = (i == N - 1); }
        __enzyme_augmentfwd((void *)smooth, enzyme_dup, y, dy, enzyme_const, N, enzyme_allocated, 64,
                            enzyme_tape, buffer);
        __enzyme_reverse((void *)smooth, enzyme_dup, y, dy, enzyme_const, N, enzyme_allocated, 64,
                         enzyme_tape, buffer);
        for (int k = 0; k < N; k += 13) {
            double yp[N], ym[N], h = 1e-6;
            for (int i = 0; i < N; i++) yp[i] = ym[i] = y0[i];
            yp[k] += h; ym[k] -= h;
            smooth(yp, N); smooth(ym, N);
            if (fabs(dy[k] - (yp[N - 1] - ym[N - 1]) / (2 * h)) > 1e-6) {
                printf("FAIL smooth round %d d/dy[%d]: %g vs %g\n", round, k, dy[k], (yp[N - 1] - ym[N - 1]) / (2 * h));
                failures++;
            }
        }
    }
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
