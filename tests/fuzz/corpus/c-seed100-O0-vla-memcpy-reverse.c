/* fuzz-failure: {"lang": "c", "seed": 100, "level": "O0", "kind": "wrong", "valgrind": false, "detail": "point 0 d/dx1: reverse 0.0 != forward 2.0"} */
/* fuzz: generated from seed 100 by tests/fuzz/gen_c.py */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

#define NMAX 8

/* an index in [0, m) from a bounded value; no out-of-range conversion */
__attribute__((unused)) static int pick(double v, int m) {
    double u = fabs(v);
    if (!(u < 1000.0))
        u = 0.0;
    return (int)(u * 3.0) % m;
}


static double h1(double a, double b) {
    double t = 0.5;
    return t;
}

double f(double *x, double a, int n) {
    double acc = 0.5;
    double t2 = 0.5;
    double t4 = 0.5;
    double v5[n];
    memcpy(v5, x, (size_t)n * sizeof(double));
    double t8 = 0.5;
    double t9 = h1((0.5), t8);
    double result = acc + t2 + t4 + t9 + 2.00 * v5[1];
    return result;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {-0.337747, 1.292181, -0.531978, 0.953685, 0.597980, 1.153331, -0.624040, -0.333699, 1.204418},
    {0.322837, -1.145999, 0.458942, 0.982373, 1.003465, -0.474488, -1.028399, 0.512578, 0.901074},
};

static double call_f(double *x, const double *v, int n) {
    for (int i = 0; i < n; i++)
        x[i] = v[i];
    return f(x, v[n], n);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4;
    int nv = n + 1;
    double x[NMAX], dx[NMAX], tx[NMAX], v[NARG];
    for (int p = 0; p < 2; p++) {
        printf("primal %d %.17g\n", p, call_f(x, X0[p], n));
        for (int i = 0; i < NARG; i++)
            v[i] = X0[p][i];
        for (int i = 0; i < n; i++) {
            x[i] = v[i];
            dx[i] = 0.0;
        }
        double da = __enzyme_autodiff((void *)f, enzyme_dup, x, dx, v[n], n);
        for (int i = 0; i < n; i++)
            printf("rev %d %d %.17g\n", p, i, dx[i]);
        printf("rev %d %d %.17g\n", p, n, da);
        for (int j = 0; j < nv; j++) {
            for (int i = 0; i < n; i++) {
                x[i] = v[i];
                tx[i] = i == j ? 1.0 : 0.0;
            }
            double ta = j == n ? 1.0 : 0.0;
            (void)ta;
            double d = __enzyme_fwddiff((void *)f, enzyme_dup, x, tx, v[n], ta, n);
            printf("fwd %d %d %.17g\n", p, j, d);
        }
        for (int k = 0; k < 2; k++) {
            for (int j = 0; j < nv; j++) {
                double w[NARG];
                for (int i = 0; i < NARG; i++)
                    w[i] = v[i];
                double h = (k == 0 ? 1e-4 : 1e-6) * (fabs(v[j]) > 1.0 ? fabs(v[j]) : 1.0);
                double up = v[j] + h, down = v[j] - h;
                w[j] = up;
                double fp = call_f(x, w, n);
                w[j] = down;
                double fm = call_f(x, w, n);
                printf("fd %d %d %d %.17g\n", p, k, j, (fp - fm) / (up - down));
            }
        }
    }
    return 0;
}
