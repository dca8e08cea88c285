/* fuzz-failure: {"lang": "c-ckpt", "seed": 940001, "level": "O2", "kind": "wrong", "valgrind": false, "detail": "point 0 d/dx5: reverse 3.4321086257220004 != forward 2.9044494349380003"} */
/* fuzz: generated from seed 940001 by tests/fuzz/gen_c.py */
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

/* reduced by hand from seed 940001 (tests/fuzz/reduce.py's output, then smaller): the
   checkpointed loop reads x; x[2] is overwritten after the loop; the reverse sweep
   recomputes the loop's iterations from the memory as it is then, with the new x[2] */
double f(double *x, double a, int n) {
    double t = 0.0;
    for (int i = 0; i < n; i++)
        t += x[i] * a * a;
    x[2] = a;
    return t;
}

/* ---- driver ---- */
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {
    {-0.867988, -0.574438, -0.692719, -0.417431, 1.049037, -0.965871, -1.058951, -1.115295, -1.273327},
    {-0.701615, -1.129655, 1.148287, 1.015295, -0.947460, 0.889069, -0.347592, 0.330744, -1.238159},
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
