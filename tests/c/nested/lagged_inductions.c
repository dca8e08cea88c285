// Gradients and Hessian-vector products of loops whose index is a lagged induction variable:
// LLVM rewrites `for (i = 0; i + 1 < n; i++)` into two header phis where i takes the value
// i + 1 had one iteration late, and `prev = i` at the end of a body makes prev one too, with
// a start of its own (n - 1 here). The reverse sweep rebuilds both from its iteration count
// instead of taping them (autodiff/counted_loops.py, _lagged_induction). Checked against the
// closed-form gradient and Hessian of Rosenbrock and of a cyclic chain.
#include <stdio.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;

enum { N = 7 };

static double rosen(const double *x, long n) {
  double s = 0.0;
  for (long i = 0; i + 1 < n; i++) {
    double d = x[i + 1] - x[i] * x[i], e = 1.0 - x[i];
    s += 100.0 * d * d + e * e;
  }
  return s;
}

// sum_i x[i] * x[prev]^2 with prev = i - 1, and n - 1 for i = 0 (the lagged start differs)
static double chain(const double *x, long n) {
  double s = 0.0;
  long prev = n - 1;
  for (long i = 0; i < n; i++) {
    s += x[i] * x[prev] * x[prev];
    prev = i;
  }
  return s;
}

static void grad_rosen(const double *x, double *g, long n) {
  for (long i = 0; i < n; i++) g[i] = 0.0;
  __enzyme_autodiff((void *)rosen, enzyme_dup, x, g, enzyme_const, n);
}

static void grad_chain(const double *x, double *g, long n) {
  for (long i = 0; i < n; i++) g[i] = 0.0;
  __enzyme_autodiff((void *)chain, enzyme_dup, x, g, enzyme_const, n);
}

static int check(const char *what, long i, double got, double want) {
  if (fabs(got - want) <= 1e-10 * (1.0 + fabs(want))) return 0;
  printf("FAIL %s[%ld] = %.15g, want %.15g\n", what, i, got, want);
  return 1;
}

int main(void) {
  double x[N] = {0.3, -0.7, 1.1, 0.4, -0.2, 0.9, -1.3}, v[N] = {1, -0.5, 0.25, 2, -1, 0.75, 0.5};
  double g[N], hv[N], gw[N];
  int bad = 0;

  grad_rosen(x, g, N);
  for (long i = 0; i < N; i++) {
    double want = 0.0;
    if (i + 1 < N) want += -400.0 * x[i] * (x[i + 1] - x[i] * x[i]) - 2.0 * (1.0 - x[i]);
    if (i > 0) want += 200.0 * (x[i] - x[i - 1] * x[i - 1]);
    bad |= check("rosen gradient", i, g[i], want);
  }
  __enzyme_fwddiff((void *)grad_rosen, enzyme_dup, x, v, enzyme_dupnoneed, g, hv, enzyme_const, (long)N);
  for (long i = 0; i < N; i++) {  // H is tridiagonal
    double want = 0.0;
    if (i + 1 < N) want += (1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0) * v[i] - 400.0 * x[i] * v[i + 1];
    if (i > 0) want += 200.0 * v[i] - 400.0 * x[i - 1] * v[i - 1];
    bad |= check("rosen hvp", i, hv[i], want);
  }

  // chain: d/dx_j = x[p(j)]^2 + 2 x[j] x[s(j)], p(j) = (j - 1) mod n, s(j) = (j + 1) mod n
  grad_chain(x, g, N);
  for (long j = 0; j < N; j++) {
    long p = (j + N - 1) % N, s = (j + 1) % N;
    gw[j] = x[p] * x[p] + 2.0 * x[j] * x[s];
    bad |= check("chain gradient", j, g[j], gw[j]);
  }
  __enzyme_fwddiff((void *)grad_chain, enzyme_dup, x, v, enzyme_dupnoneed, g, hv, enzyme_const, (long)N);
  for (long j = 0; j < N; j++) {
    long p = (j + N - 1) % N, s = (j + 1) % N;
    double want = 2.0 * x[p] * v[p] + 2.0 * x[s] * v[j] + 2.0 * x[j] * v[s];
    bad |= check("chain hvp", j, hv[j], want);
  }
  if (!bad) printf("ok\n");
  return bad;
}
