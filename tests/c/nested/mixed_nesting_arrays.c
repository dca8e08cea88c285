// All four nestings over array code (issue 25 item 1): reverse over reverse, forward over
// reverse, reverse over forward and forward over forward, checked against central
// differences of the inner derivative.
#include <stdio.h>
#include <math.h>
extern double __enzyme_autodiff(void*, ...);
extern double __enzyme_fwddiff(void*, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;
double f(const double* x, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) { double a = x[i], b = x[(i+1)%n]; s += exp(a*b) + log(1 + a*a); }
  return s;
}
// g(x) = sum_k w_k * df/dx_k  (reverse inside)
double g_rev(const double* x, int n) {
  double gr[16] = {0};
  __enzyme_autodiff((void*)f, enzyme_dup, x, gr, enzyme_const, n);
  double s = 0; for (int k = 0; k < n; k++) s += (k + 1) * gr[k];
  return s;
}
// h(x) = directional derivative of f along w (forward inside)
double h_fwd(const double* x, int n) {
  double w[16]; for (int k = 0; k < n; k++) w[k] = k + 1;
  return __enzyme_fwddiff((void*)f, enzyme_dup, x, w, enzyme_const, n);
}
int main(void) {
  enum { N = 5 };
  double x[N] = {0.1, -0.3, 0.5, 0.2, -0.4};
  int bad = 0;
  double (*fs[2])(const double*, int) = {g_rev, h_fwd};
  for (int which = 0; which < 2; which++) {
    double d_rev[N] = {0}, d_fwd[N];
    if (which == 0) __enzyme_autodiff((void*)g_rev, enzyme_dup, x, d_rev, enzyme_const, N);
    else __enzyme_autodiff((void*)h_fwd, enzyme_dup, x, d_rev, enzyme_const, N);
    for (int k = 0; k < N; k++) {
      double e[N] = {0}; e[k] = 1;
      d_fwd[k] = which == 0 ? __enzyme_fwddiff((void*)g_rev, enzyme_dup, x, e, enzyme_const, N)
                            : __enzyme_fwddiff((void*)h_fwd, enzyme_dup, x, e, enzyme_const, N);
      double xp[N], xm[N], hh = 1e-5;
      for (int i = 0; i < N; i++) xp[i] = xm[i] = x[i];
      xp[k] += hh; xm[k] -= hh;
      double fd = (fs[which](xp, N) - fs[which](xm, N)) / (2*hh);
      if (fabs(d_rev[k] - fd) > 1e-6 || fabs(d_fwd[k] - fd) > 1e-6)
        printf("FAIL %d k=%d rev %.10g fwd %.10g fd %.10g\n", which, k, d_rev[k], d_fwd[k], fd);
      bad |= fabs(d_rev[k] - fd) > 1e-6 || fabs(d_fwd[k] - fd) > 1e-6;
    }
  }
  if (!bad) printf("ok\n");
  return bad;
}
