// std::vector filled with push_back in the active path, read with range-for,
// std::accumulate and std::inner_product; reverse and forward mode (issue 24 item 3).
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

// sum_i (x^i + sin(i x))^2 for i = 1..5, built in a vector
double powers(double x) {
  std::vector<double> terms;
  double p = 1.0;
  for (int i = 1; i <= 5; i++) {
    p *= x;
    terms.push_back(p + std::sin(i * x));
  }
  double s = 0.0;
  for (double t : terms) s += t * t;
  return s;
}

double d_powers(double x) {
  double d = 0.0;
  for (int i = 1; i <= 5; i++) {
    double t = std::pow(x, i) + std::sin(i * x);
    d += 2 * t * (i * std::pow(x, i - 1) + i * std::cos(i * x));
  }
  return d;
}

// accumulate and inner_product over vectors that hold x-dependent values
double algorithms(double x) {
  std::vector<double> a(4), b(4);
  for (int i = 0; i < 4; i++) {
    a[i] = x * (i + 1);
    b[i] = std::exp(0.5 * i * x);
  }
  double sum = std::accumulate(a.begin(), a.end(), 0.0);
  return sum * std::inner_product(a.begin(), a.end(), b.begin(), 1.0);
}

double d_algorithms(double x) {
  double sum = 10 * x, dsum = 10;
  double ip = 1.0, dip = 0.0;
  for (int i = 0; i < 4; i++) {
    double e = std::exp(0.5 * i * x);
    ip += x * (i + 1) * e;
    dip += (i + 1) * e + x * (i + 1) * 0.5 * i * e;
  }
  return dsum * ip + sum * dip;
}

int main() {
  const double points[] = {0.3, 0.9, 1.4};
  for (double x : points) {
    check("powers reverse", x, __enzyme_autodiff((void *)powers, x), d_powers(x), 1e-9);
    check("powers forward", x, __enzyme_fwddiff((void *)powers, x, 1.0), d_powers(x), 1e-9);
    check("algorithms reverse", x, __enzyme_autodiff((void *)algorithms, x), d_algorithms(x), 1e-9);
    check("algorithms forward", x, __enzyme_fwddiff((void *)algorithms, x, 1.0), d_algorithms(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
