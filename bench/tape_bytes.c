#include <stdio.h>
#include <stdlib.h>
#include <math.h>
extern double __enzyme_autodiff(void*, ...);
extern int enzyme_dup, enzyme_const;
extern long __zymase_tape_bytes;
/* 1: a loop that overwrites its input */
void overwrite(double *x, int n) { for (int i = 0; i < n; i++) x[i] = sin(x[i]) * x[i]; }
/* 2: a reduction */
double reduce(const double *x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i]; return s; }
/* 3: a stencil, 10 steps */
double stencil(const double *u0, int n) {
  double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) a[i] = u0[i];
  for (int s = 0; s < 10; s++) {
    b[0] = a[0]; b[n-1] = a[n-1];
    for (int i = 1; i < n - 1; i++) b[i] = a[i] + 0.2 * (a[i-1] - 2 * a[i] + a[i+1]) + 0.01 * sin(a[i]);
    double *t = a; a = b; b = t;
  }
  double e = 0; for (int i = 0; i < n; i++) e += a[i] * a[i];
  free(a); free(b); return e;
}
int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  double *x = malloc(n * sizeof(double)), *dx = calloc(n, sizeof(double));
  for (int i = 0; i < n; i++) x[i] = 0.001 * i;
  long t0 = __zymase_tape_bytes;
  __enzyme_autodiff((void*)overwrite, enzyme_dup, x, dx, enzyme_const, n);
  long t1 = __zymase_tape_bytes;
  __enzyme_autodiff((void*)reduce, enzyme_dup, x, dx, enzyme_const, n);
  long t2 = __zymase_tape_bytes;
  __enzyme_autodiff((void*)stencil, enzyme_dup, x, dx, enzyme_const, n);
  long t3 = __zymase_tape_bytes;
  printf("n=%d overwrite %ld B (%.1f B/iter), reduce %ld B (%.1f B/iter), stencil %ld B (%.1f B per inner iter)\n",
         n, t1 - t0, (double)(t1 - t0) / n, t2 - t1, (double)(t2 - t1) / n, t3 - t2, (double)(t3 - t2) / (10.0 * (n - 2)));
  return 0;
}
