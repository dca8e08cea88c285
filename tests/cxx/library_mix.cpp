// An ordinary C++ program around a derivative: std::string, std::map, std::function,
// std::sort, a virtual call through unique_ptr and a try/catch in main,
// all compiled with exceptions, must come through zymase unchanged at every level; the
// differentiated function sorts a std::vector of active values (issue 24 item 3).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

// smallest times largest of {x, 2x, x^2} (x > 2: x * x^2 = x^3)
double extremes(double x) {
  std::vector<double> v{x, 2 * x, x * x};
  std::sort(v.begin(), v.end());
  return v.front() * v.back();
}

struct Base {
  virtual ~Base() = default;
  virtual std::string name() const { return "base"; }
};
struct Derived : Base {
  std::string name() const override { return "derived"; }
};

int main(int argc, char **) {
  std::map<std::string, int> table{{"a", 1}, {"b", 2}};
  std::function<int(int)> shift = [&](int k) { return k + table["b"]; };
  std::unique_ptr<Base> obj(argc > 5 ? new Base : new Derived);
  std::string text = obj->name() + std::to_string(shift(3));
  try {
    if (text != "derived5") throw std::runtime_error(text);
    std::printf("ok the program around the derivative: %s\n", text.c_str());
  } catch (const std::exception &e) {
    failures++;
    std::printf("FAIL unexpected text %s\n", e.what());
  }
  const double points[] = {2.5, 3.0, 4.5};
  for (double x : points) {
    check("extremes reverse", x, __enzyme_autodiff((void *)extremes, x), 3 * x * x, 1e-9);
    check("extremes forward", x, __enzyme_fwddiff((void *)extremes, x, 1.0), 3 * x * x, 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
