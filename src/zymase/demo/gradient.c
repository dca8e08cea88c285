/* A function of four inputs: its gradient from zymase (one reverse sweep) beside
 * central finite differences (eight evaluations), with the time of each. */
#include <math.h>
#include <stdio.h>
#include <time.h>

typedef struct { double dx, dy, dz, dw; } grad4;
extern grad4 __enzyme_autodiff(void *, ...);

double f(double x, double y, double z, double w) {
    double s = 0.0;
    for (int k = 1; k <= 8; k++)          /* a loop with data-dependent branches */
        s += (k % 2 ? sin(k * x * y) : cos(z / k)) / k;
    return s + exp(z) / (1.0 + w * w) + sqrt(x * x + z * z) * tanh(w);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

volatile double sink;

int main(void) {
    double p[4] = {0.7, -1.3, 0.4, 2.1};
    grad4 g = __enzyme_autodiff((void *)f, p[0], p[1], p[2], p[3]);
    double ad[4] = {g.dx, g.dy, g.dz, g.dw};
    const char *names[4] = {"x", "y", "z", "w"};
    int failures = 0;
    printf("f(x, y, z, w) at (%.1f, %.1f, %.1f, %.1f) = %.12f\n\n", p[0], p[1], p[2], p[3],
           f(p[0], p[1], p[2], p[3]));
    printf("%6s %20s %20s %12s\n", "d/d", "zymase (reverse)", "finite differences", "rel. diff");
    for (int i = 0; i < 4; i++) {
        double h = 1e-6, a[4], b[4];
        for (int j = 0; j < 4; j++) a[j] = b[j] = p[j];
        a[i] += h;
        b[i] -= h;
        double fd = (f(a[0], a[1], a[2], a[3]) - f(b[0], b[1], b[2], b[3])) / (2 * h);
        double rel = fabs(ad[i] - fd) / fmax(1e-12, fabs(fd));
        printf("%6s %20.12f %20.12f %12.2e\n", names[i], ad[i], fd, rel);
        failures += rel > 1e-6;
    }
    const int N = 200000;
    double t0 = now();
    for (int n = 0; n < N; n++) sink = f(p[0] + n * 1e-12, p[1], p[2], p[3]);
    double t_primal = (now() - t0) / N;
    t0 = now();
    for (int n = 0; n < N; n++) {
        grad4 q = __enzyme_autodiff((void *)f, p[0] + n * 1e-12, p[1], p[2], p[3]);
        sink = q.dx + q.dw;
    }
    double t_grad = (now() - t0) / N;
    t0 = now();
    for (int n = 0; n < N; n++) {
        double s = 0;
        for (int i = 0; i < 4; i++) {
            double a[4] = {p[0] + n * 1e-12, p[1], p[2], p[3]}, b[4] = {p[0] + n * 1e-12, p[1], p[2], p[3]};
            a[i] += 1e-6;
            b[i] -= 1e-6;
            s += f(a[0], a[1], a[2], a[3]) - f(b[0], b[1], b[2], b[3]);
        }
        sink = s;
    }
    double t_fd = (now() - t0) / N;
    printf("\ntime per call: f %.0f ns, zymase gradient %.0f ns (%.1fx f), finite differences %.0f ns (%.1fx f)\n",
           t_primal * 1e9, t_grad * 1e9, t_grad / t_primal, t_fd * 1e9, t_fd / t_primal);
    return failures != 0;
}
