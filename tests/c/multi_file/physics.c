/* Part of the three-file program of main.c: a spring chain's energy and its stiffness. */
#include <math.h>

double stiffness = 1.0;

static double square(double v) { return v * v * v * v; }

double energy(const double *x, int i, int n) {
    double left = i > 0 ? x[i - 1] : 0.0;
    return stiffness * square(x[i] - left) + sin(x[i]) * (i + 1) / n;
}
