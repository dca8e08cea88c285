/* fuzz-failure: {"lang": "c", "seed": 0, "level": "O2", "kind": "wrong", "valgrind": false, "detail": "hand probe (session 30, probe2), not generated: an 8-byte memmove LLVM splits into load i64 and a phi with undef: d/dx0 reverse 0, central differences 1"} */
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

#include <stddef.h>
static double f(double *x, int n) {
  double *old = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) old[i] = x[i];
  double *nw = malloc(n * sizeof(double));
  nw[1] = 0.5;
  memmove(nw, old, 8);
  memmove(nw + 2, old + 1, (n - 3) * sizeof(double));
  free(old);
  double r = 0; for (int i = 0; i < n - 1; i++) r += nw[i] * (i + 1);
  free(nw); return r;
}
