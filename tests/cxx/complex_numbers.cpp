// std::complex<double> arithmetic in the active path: construction, real/imag, conj,
// +, *, / (clang calls __muldc3/__divdc3, which return {double, double}), norm and abs
// (which calls cabs) (issue 24 item 3). complex_functions.cpp checks exp, log, pow and
// the rest.
#include <cmath>
#include <complex>
#include <cstdio>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

// |z^2 / w| + Re(conj(z) + w) |w|^2, z = x + 2i, w = 1 + x i
double complexes(double x) {
  std::complex<double> z(x, 2.0), w(1.0, x);
  double ww = std::norm(w);
  std::complex<double> q = z * z / w;
  return std::abs(q) + (std::conj(z) + w).real() * ww;
}

double d_complexes(double x) {
  // |q| = |z|^2 / |w| = (x^2 + 4) / sqrt(1 + x^2); then (x + 1)(1 + x^2)
  double n = x * x + 4, m = std::sqrt(1 + x * x);
  return 2 * x / m - n * x / (m * m * m) + (1 + x * x) + 2 * x * (x + 1);
}

int main() {
  const double points[] = {0.3, 1.2, 2.5};
  for (double x : points) {
    check("complex reverse", x, __enzyme_autodiff((void *)complexes, x), d_complexes(x), 1e-9);
    check("complex forward", x, __enzyme_fwddiff((void *)complexes, x, 1.0), d_complexes(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
