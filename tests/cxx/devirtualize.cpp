// A virtual call that the optimizer can devirtualize, in the active path (issue 24
// item 3). tests/test_cxx_programs.py builds it from -O1 up: at -O0 nothing
// devirtualizes the call, and zymase refuses the indirect call with a clear error.
#include <cmath>
#include <cstdio>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

struct Shape {
  virtual ~Shape() {}
  virtual double area(double s) const = 0;
};
struct Square final : Shape {
  double area(double s) const override { return s * s; }
};
struct Circle final : Shape {
  double area(double r) const override { return M_PI * r * r; }
};

static double total_area(const Shape &a, const Shape &b, double x) { return a.area(x) + b.area(std::sin(x)); }

double shapes(double x) {
  Square sq;
  Circle c;
  return total_area(sq, c, x);  // x^2 + pi sin^2 x
}

double d_shapes(double x) { return 2 * x + 2 * M_PI * std::sin(x) * std::cos(x); }

int main() {
  const double points[] = {0.3, 1.2, 2.5};
  for (double x : points) {
    check("shapes reverse", x, __enzyme_autodiff((void *)shapes, x), d_shapes(x), 1e-9);
    check("shapes forward", x, __enzyme_fwddiff((void *)shapes, x, 1.0), d_shapes(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
