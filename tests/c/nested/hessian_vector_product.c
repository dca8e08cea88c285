// Hessian-vector products by forward mode over a reverse-mode gradient (issue 25 item 1):
// the gradient has a loop (its derivative keeps a tape) and writes into an
// enzyme_dupnoneed buffer; checked against central differences of the gradient.
#include <stdio.h>
#include <math.h>
extern void __enzyme_autodiff(void*, ...);
extern void __enzyme_fwddiff(void*, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;
// f(x) = sum_i exp(x_i * x_{i+1}) + log(1 + x_i^2)
double f(const double* x, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) { double a = x[i], b = x[(i+1)%n]; s += exp(a*b) + log(1 + a*a); }
  return s;
}
void grad(const double* x, double* g, int n) {
  for (int i = 0; i < n; i++) g[i] = 0;
  __enzyme_autodiff((void*)f, enzyme_dup, x, g, enzyme_const, n);
}
// Hessian-vector product: forward mode over grad
void hvp(const double* x, const double* v, double* hv, int n) {
  double g[16];
  __enzyme_fwddiff((void*)grad, enzyme_dup, x, v, enzyme_dupnoneed, g, hv, enzyme_const, n);
}
int main(void) {
  enum { N = 5 };
  double x[N] = {0.1, -0.3, 0.5, 0.2, -0.4}, v[N] = {1, 0.5, -1, 2, 0.25}, hv[N];
  hvp(x, v, hv, N);
  int bad = 0;
  for (int k = 0; k < N; k++) {  // central differences of the gradient along v
    double xp[N], xm[N], gp[N], gm[N], h = 1e-5;
    for (int i = 0; i < N; i++) { xp[i] = x[i] + h*v[i]; xm[i] = x[i] - h*v[i]; }
    grad(xp, gp, N); grad(xm, gm, N);
    double fd = (gp[k] - gm[k]) / (2*h);
    if (fabs(hv[k] - fd) > 1e-6) printf("FAIL hv[%d] = %.10g fd %.10g\n", k, hv[k], fd);
    bad |= fabs(hv[k] - fd) > 1e-6;
  }
  if (!bad) printf("ok\n");
  return bad;
}
