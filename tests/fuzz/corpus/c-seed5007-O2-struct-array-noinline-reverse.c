/* fuzz-failure: {"lang": "c", "seed": 5007, "level": "O2", "kind": "wrong", "valgrind": false, "detail": "point 0 d/dx0: reverse 0.20896245749461084 != forward 0.6778776840569811"} */
/* fuzz: generated from seed 5007 by tests/fuzz/gen_c.py */
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

__attribute__((noinline)) static double h1(double a, double b) {
    double t = fmax(exp(-(b * b)), (0.5));
    if (a > b) t = t * (atan(t) / (1.0 + atan(t) * atan(t)));
    return t;
}

static double h2(double a, double b) {
    double t = 0.5;
    return t;
}

double f(double *x, double a, int n) {
    double acc = 0.5;
    double t3 = x[0] * -0.25;
    double t4 = 0.5;
    double t5 = 0.5;
    struct pair ps6[NMAX];
    for (int i = 0; i < n; i++) {
        ps6[i].a = x[i];
        ps6[i].b = (0.5 * cos((t4 * (a / (1.0 + x[i] * x[i])))));
        ps6[i].k = i % 3;
    }
    double t7 = 0.5;
    for (int i = 0; i < n; i++)
        t7 += ps6[i].a * ps6[i].b;
    double t8 = 0.5;
    struct pair st9 = { (2.00 - t3), (0.5 * cos((log(1.0 + t3 * t3) / (1.0 + x[1] * x[1])))), 0 };
    double t10 = st9.a;
    double t11 = 0.5;
    double t12 = h1(fmin(x[pick(a, n)], 0.25), (t3 + 0.70));
    double t13 = h2(fmax(x[0], t10), atan(0.5));
    double result = acc + t5 + t7 + t8 + t11 + t12 + t13;
    return result;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {0.413712, -1.137111, -0.456846, -0.383202, -1.001345, 1.275335, 1.291055, 0.377875, -0.565077},
    {-0.677776, 0.605900, 0.362208, 0.576128, 1.296194, 0.898571, -0.702348, 1.233959, -1.235622},
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
