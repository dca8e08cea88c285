/* fuzz-failure: {"lang": "c", "seed": 5000, "level": "O0", "kind": "crashed", "valgrind": true, "detail": "run: valgrind error: ==12818== Conditional jump or move depends on uninitialised value(s)\n==12818==    at 0x498E128: __printf_fp_l (printf_fp.c:396)\n==12818==    by 0x499904C: __printf_fp_spec (vfprintf-internal.c:354)\n==12818==    by 0x499904C: __vfprintf_internal (vfprintf-internal.c:1061)\n==12818==    by 0x498D65A: p"} */
/* fuzz: generated from seed 5000 by tests/fuzz/gen_c.py */
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

double f(double *x, double a, int n) {
    double acc = 0.5;
    double t1 = 0.5;
    double t2 = 0.5;
    double v3[n];
    for (int i = 0; i < n; i++)
        v3[i] = sin(a);
    double *p4 = (t2 > log1p(x[pick(t2, n)] * x[pick(t2, n)])) ? x : v3;
    for (int i = 0; i < n; i++)
        p4[i] = 0.5;
    double t5 = 0.5;
    double t6 = 0.5;
    double result = acc + t1 + t5 + t6;
    return result;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {0.854016, -1.229003, 1.201589, -0.448303, 0.475698, -1.145560, -0.954171, 0.777012, 0.725492},
    {0.940137, -1.275933, 0.370236, 0.307980, -0.758596, -0.596713, -0.996420, -0.954371, -1.192162},
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
