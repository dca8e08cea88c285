/* Enzyme's headline example: out[i] = in[i] / mag(in). With the pre-AD pipeline, LICM
 * hoists the read-only call mag(in, n) out of the loop and the gradient is O(n); with
 * --no-preopt (AD before optimization) the gradient recomputes mag per element: O(n^2).
 *   zymase cc -O2 -fno-math-errno bench/licm_normalize.c -o norm && ./norm 4000
 *   zymase cc -O2 -fno-math-errno --no-preopt bench/licm_normalize.c -o norm0 && ./norm0 4000
 * (-fno-math-errno: with errno, sqrt writes memory and cannot be hoisted.) */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <time.h>
extern double __enzyme_autodiff(void*, ...);
extern int enzyme_dup, enzyme_const;
__attribute__((noinline)) static double mag(const double *restrict x, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * x[i]; return sqrt(s); }
void normalize(double *restrict out, const double *restrict in, int n) { for (int i = 0; i < n; i++) out[i] = in[i] / mag(in, n); }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  double *in = malloc(n * 8), *din = calloc(n, 8), *out = malloc(n * 8), *dout = malloc(n * 8);
  for (int i = 0; i < n; i++) { in[i] = 1 + 0.001 * i; dout[i] = 1; }
  double t0 = now(); normalize(out, in, n); double tp = now() - t0; volatile double sink = out[n-1]; (void)sink;
  t0 = now(); __enzyme_autodiff((void*)normalize, enzyme_dup, out, dout, enzyme_dup, in, din, enzyme_const, n); double tg = now() - t0;
  printf("n=%d primal %.3g s gradient %.3g s ratio %.1f din[0]=%g\n", n, tp, tg, tg / tp, din[0]);
}
