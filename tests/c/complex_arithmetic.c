/* C99 double _Complex in the active path (issue 24 item 3): clang calls __muldc3 and
   __divdc3 for * and /, and cexp/clog/csqrt/cpow/csin/ccos/ctan/csinh/ccosh/ctanh return
   {double, double}. Every derivative is checked against a central difference, in
   reverse and forward mode. */
#include <complex.h>
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;

static void check(const char *what, double x, double got, double want) {
  int ok = fabs(got - want) <= 1e-6 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s at %g: got %.12g want %.12g\n", ok ? "ok" : "FAIL", what, x, got, want);
}

static double arithmetic(double x) {
  double complex z = x + 2.0 * I, w = 1.0 + x * x * I;
  return creal(z * w / (z + 0.5)) + cimag(w / z);
}

static double exp_log_sqrt(double x) {
  double complex z = 0.5 * x + x * I;
  return cimag(cexp(z * z)) + creal(clog(z + 1.0)) * cimag(csqrt(z - 3.0 * I));
}

static double power(double x) { return creal(cpow(x + 0.5 * I, 0.7 + x * I)); }

static double trigonometric(double x) {
  double complex z = x + 0.3 * x * I;
  return creal(csin(z)) + cimag(ccos(z)) + creal(ctan(z));
}

static double hyperbolic(double x) {
  double complex z = 0.2 * x + x * I;
  return cimag(csinh(z)) + creal(ccosh(z)) + cimag(ctanh(z));
}

#define CHECK(f, x)                                                          \
  do {                                                                       \
    double h = 1e-6, fd = (f((x) + h) - f((x) - h)) / (2 * h);               \
    check(#f " reverse", x, __enzyme_autodiff((void *)f, x), fd);            \
    check(#f " forward", x, __enzyme_fwddiff((void *)f, x, 1.0), fd);        \
  } while (0)

int main(void) {
  const double points[] = {0.4, 1.3};
  for (int i = 0; i < 2; i++) {
    double x = points[i];
    CHECK(arithmetic, x);
    CHECK(exp_log_sqrt, x);
    CHECK(power, x);
    CHECK(trigonometric, x);
    CHECK(hyperbolic, x);
  }
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
