/* fuzz-failure: {"lang": "c", "seed": 5009, "level": "O0", "kind": "wrong", "valgrind": false, "detail": "point 0 d/dx3: reverse 1.5e-323 != forward -0.3"} */
/* fuzz: generated from seed 5009 by tests/fuzz/gen_c.py */
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

struct pair {
    double a;
    double b;
    int k;
};

static double h1(double a, double b) {
    double t = 0.5;
    return t;
}

static double hs2(const double *p, int m) {
    double s = 0.5;
    return s;
}

double f(double *x, int n) {
    double acc = 0.5;
    double t3 = 0.5;
    double t4 = hs2(x, n);
    double t5 = 0.5;
    struct pair st6 = { (t4 + t3), sin(sin((0.70 - x[pick(t5, n)]))), 2 };
    double t7 = st6.a;
    double v8[n];
    memset(v8, 0, (size_t)n * sizeof(double));
    double t9 = 0.5;
    int it10 = 0;
    while (t9 < 1.5 && it10 < 8) {
        it10++;
    }
    double t11 = 0.5;
    memcpy(v8, x, (size_t)n * sizeof(double));
    double t12 = h1(x[0], erf(0.5));
    int k18 = pick(exp(0.5 * sin(x[pick(t9, n)])), 3);
    for (int j = 0; j <= k18; j++)
        t9 = 0.5;
    double result = acc + t7 + t11 + t12 + -0.30 * v8[3];
    return result;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {-0.510314, 0.347947, 0.415796, 0.570061, -1.259169, -0.568302, -1.050394, 0.490696, -0.693107},
    {-0.795364, 0.722152, -1.285837, -0.764839, -0.849620, 0.785100, -1.239018, 1.100749, 0.679633},
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
