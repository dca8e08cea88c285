/* fuzz-failure: {"lang": "c", "seed": 700278, "level": "O0", "kind": "wrong", "valgrind": false, "detail": "point 0 d/dx0: reverse nan forward 0.0 (not finite)"} */
/* fuzz: generated from seed 700278 by tests/fuzz/gen_c.py */
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
    return t + (((0.5) * hypot(a, a)) / (0.5));
}

static double hs2(const double *p, int m) {
    double s = 0.5;
    return s;
}

static double rec3(double v, int d) {
        return 0.5;
}

double f(double *x, double a, int n) {
    double acc = 0.5;
    double t4 = x[0] * 0.75;
    double t5 = hs2(x, n);
    double t6 = 0.5;
    double t7 = h1((t4 - t4), (0.5));
    int k8 = pick(t6, 4);
    for (int j = 0; j <= k8; j++)
        t5 = 0.5;
    struct pair st9 = { (-1.10 * x[4]), (x[3] / (1.0 + x[3] * x[3])), 3 };
    double t10 = st9.a;
    double t11 = rec3((0.5), 3);
    double result = acc + t5 + t7 + t10 + t11;
    return result;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {-0.973466, -0.303953, -0.714607, -1.111825, -1.253159, -0.602879, -0.533789, -0.851080, 0.985380},
    {1.265639, 0.821122, 0.311759, -0.463741, -0.714992, -0.728870, -0.454386, -1.083180, -1.122695},
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
