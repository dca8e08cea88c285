/* fuzz-failure: {"lang": "c", "seed": 5023, "level": "O1", "kind": "wrong", "valgrind": false, "detail": "point 1 d/dx0: reverse -2.2343342486920426 != forward -1.4489213609170832"} */
/* fuzz: generated from seed 5023 by tests/fuzz/gen_c.py */
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

static double h2(double a, double b) {
    double t = 0.5;
    return t;
}

static double rec3(double v, int d) {
    if (d <= 0)
        return 0.5;
    return 0.5 * rec3((0.5), d - 1) + tanh(atan((v / (0.5))));
}

double f(double *x, int n) {
    double acc = 0.5;
    double t4 = 0.5;
    double t7 = 0.5;
    double w8[NMAX];
    memcpy(w8, x, (size_t)n * sizeof(double));
    double t9 = tanh(pow(0.5 + w8[3] * w8[3], 0.5));
    int it10 = 0;
    while (t9 < 2.5 && it10 < 8) {
        t9 += 0.4 + 0.2 * (fmax((0.5), (t7 - w8[2])) / (0.5));
    }
    double t11 = 0.5;
    double t12 = h1(t7, expm1(0.5));
    double t13 = h2(x[4], log(0.5));
    double t14 = rec3(log(1.0 + w8[1] * w8[1]), 2);
    double result = acc + t4 + t9 + t11 + t12 + t13 + t14;
    return result;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {1.060399, -1.267457, -1.038796, 0.609130, -0.313651, -1.141364, -0.986859, -0.883870, 0.547813},
    {-0.954463, 0.874894, 0.973711, 1.251114, -0.393154, -1.190433, -0.731409, 0.565802, -0.948062},
};

static double call_f(double *x, const double *v, int n) {
    for (int i = 0; i < n; i++)
        x[i] = v[i];
    return f(x, n);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4;
    int nv = n + 0;
    double x[NMAX], dx[NMAX], tx[NMAX], v[NARG];
    for (int p = 0; p < 2; p++) {
        printf("primal %d %.17g\n", p, call_f(x, X0[p], n));
        for (int i = 0; i < NARG; i++)
            v[i] = X0[p][i];
        for (int i = 0; i < n; i++) {
            x[i] = v[i];
            dx[i] = 0.0;
        }
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, n);
        for (int i = 0; i < n; i++)
            printf("rev %d %d %.17g\n", p, i, dx[i]);
        
        for (int j = 0; j < nv; j++) {
            for (int i = 0; i < n; i++) {
                x[i] = v[i];
                tx[i] = i == j ? 1.0 : 0.0;
            }
            double ta = j == n ? 1.0 : 0.0;
            (void)ta;
            double d = __enzyme_fwddiff((void *)f, enzyme_dup, x, tx, n);
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
