// try/catch inside the differentiated function, with the catch never taken at run
// time, and a scope with a destructor (std::vector): the invoke paths on which nothing
// throws are differentiated (issue 24 item 3).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

__attribute__((noinline)) double checked_log(double v) {
  if (!(v > 0)) throw std::domain_error("log of a non-positive number");
  return std::log(v);
}

double guarded(double x) {
  std::vector<double> parts = {x, x * x};
  double r;
  try {
    r = checked_log(parts[0] + parts[1]) * x;  // x log(x + x^2)
  } catch (const std::domain_error &) {
    r = 0.0;
  }
  return r;
}

double d_guarded(double x) { return std::log(x + x * x) + x * (1 + 2 * x) / (x + x * x); }

int main() {
  const double points[] = {0.5, 1.0, 3.0};
  for (double x : points) {
    try {
      check("guarded reverse", x, __enzyme_autodiff((void *)guarded, x), d_guarded(x), 1e-9);
      check("guarded forward", x, __enzyme_fwddiff((void *)guarded, x, 1.0), d_guarded(x), 1e-9);
    } catch (...) {
      failures++;
      std::printf("FAIL an exception at %g\n", x);
    }
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
