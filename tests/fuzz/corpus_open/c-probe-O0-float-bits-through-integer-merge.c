/* fuzz-failure: {"lang": "c", "seed": 0, "level": "O0", "kind": "wrong", "valgrind": false, "detail": "hand probe (session 30, probe2), not generated: a double's bits copied into a long long through a merge (if) then into nw: d/dx0 reverse 0 and forward 0, central differences 2"} */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
extern int enzyme_dup, enzyme_const, enzyme_out;
void __enzyme_autodiff(void*, ...);
double __enzyme_fwddiff(void*, ...);
static double f(double *x, int n);
static int check(int n, double *x0) {
    double *x = malloc(n * sizeof(double)), *dx = calloc(n, sizeof(double));
    memcpy(x, x0, n * sizeof(double));
    __enzyme_autodiff((void*)f, enzyme_dup, x, dx, enzyme_const, n);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double h = 1e-6 * fmax(1.0, fabs(x0[i]));
        memcpy(x, x0, n * sizeof(double)); x[i] += h; double fp = f(x, n);
        memcpy(x, x0, n * sizeof(double)); x[i] -= h; double fm = f(x, n);
        double fd = (fp - fm) / (2 * h);
        double err = fabs(fd - dx[i]) / fmax(1.0, fabs(fd));
        if (getenv("ALL") || err > 1e-5) { printf("BAD i=%d ad=%.10g fd=%.10g\n", i, dx[i], fd); bad = 1; }
        double *t = calloc(n, sizeof(double)); t[i] = 1.0;
        memcpy(x, x0, n * sizeof(double));
        double fw = __enzyme_fwddiff((void*)f, enzyme_dup, x, t, enzyme_const, n);
        free(t);
        if (fabs(fw - fd) / fmax(1.0, fabs(fd)) > 1e-5) { printf("BADFWD i=%d fwd=%.10g fd=%.10g\n", i, fw, fd); bad = 1; }
    }
    printf(bad ? "WRONG\n" : "ok\n");
    free(x); free(dx);
    return bad;
}
int main(void) {
    int n = 7; double x0[7];
    for (int i = 0; i < n; i++) x0[i] = 0.3 + 0.17 * i - 0.05 * i * i;
    return check(n, x0);
}

static double f(double *x, int n) {
  double *nw = malloc(n * sizeof(double));
  long long v = 0;
  if (n > 3) memcpy(&v, x, 8);
  memcpy(nw, &v, 8);
  double r = nw[0] * 2 + x[1]; free(nw); return r;
}
