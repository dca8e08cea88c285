// A class with methods, a template, lambdas (called, and passed to a template
// algorithm) and references in the active path (issue 24 item 3).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

class Spring {
 public:
  Spring(double k, double rest) : k_(k), rest_(rest) {}
  double stretch(const double &x) const { return x - rest_; }
  double energy(double x) const { double s = stretch(x); return 0.5 * k_ * s * s; }
  void scale(double f) { k_ *= f; }
 private:
  double k_, rest_;
};

template <typename T, int N>
T horner(const T (&coeffs)[N], T x) {
  T acc = coeffs[0];
  for (int i = 1; i < N; i++) acc = acc * x + coeffs[i];
  return acc;
}

template <typename F>
double apply_twice(F f, double x) { return f(f(x)); }

static void add_into(double &acc, const double &v) { acc += v * v; }

double model(double x) {
  Spring s(3.0, 0.5);
  s.scale(x);                                 // k = 3x: a member that depends on x
  double e = s.energy(x);                     // 1.5 x (x - 0.5)^2
  const double c[4] = {1.0, -2.0, 0.5, 3.0};  // x^3 - 2x^2 + 0.5x + 3
  double p = horner(c, x);
  auto sq = [](double v) { return v * v; };
  double q = apply_twice(sq, x);              // x^4
  double m = 0.0;
  double values[3] = {x, 2 * x, std::sin(x)};
  std::for_each(values, values + 3, [&m](double v) { add_into(m, v); });  // 5x^2 + sin^2 x
  double biggest = *std::max_element(values, values + 3);
  return e + p + q + m + biggest;
}

double d_model(double x) {
  double e = 1.5 * (x - 0.5) * (x - 0.5) + 3.0 * x * (x - 0.5);
  double p = 3 * x * x - 4 * x + 0.5;
  double q = 4 * x * x * x;
  double m = 10 * x + 2 * std::sin(x) * std::cos(x);
  double big = 2.0;  // 2x is the largest for the points below
  return e + p + q + m + big;
}

int main() {
  const double points[] = {0.4, 1.1, 2.0};
  for (double x : points) {
    check("model reverse", x, __enzyme_autodiff((void *)model, x), d_model(x), 1e-9);
    check("model forward", x, __enzyme_fwddiff((void *)model, x, 1.0), d_model(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
