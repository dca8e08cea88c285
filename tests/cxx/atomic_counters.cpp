// Integer atomics next to active data (issue 24 item 3): a struct holding doubles and
// a std::atomic use counter, the pattern of C++ reference counts (std::shared_ptr's
// make_shared puts its counts in the same allocation as the value). The counter's
// atomic loads, stores and increments have no derivative and must not block the doubles'.
// (compare_exchange on memory with a shadow is still refused, and so is an atomic store
// in -O2 --no-preopt builds, where type analysis takes it for float bits changed by integer
// arithmetic.)
#include <atomic>
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

struct Counted {
  double value[2];
  std::atomic<int> uses{0};
  std::atomic<long> version{0};
};

static double use(Counted &c, int i) {
  c.uses.fetch_add(1, std::memory_order_acq_rel);
  return c.value[i];
}

double counted(double x) {
  Counted *c = new Counted;
  c->value[0] = x * x;
  c->value[1] = std::exp(x);
  c->version.fetch_add(8);
  double s = use(*c, 0) * use(*c, 1);  // x^2 e^x
  if (c->uses.load(std::memory_order_acquire) == 2 && c->version.load() == 8) s += c->value[0];
  delete c;
  return s;  // x^2 e^x + x^2
}

double d_counted(double x) { return (2 * x + x * x) * std::exp(x) + 2 * x; }

int main() {
  const double points[] = {0.3, 1.1, 2.0};
  for (double x : points) {
    check("counted reverse", x, __enzyme_autodiff((void *)counted, x), d_counted(x), 1e-9);
    check("counted forward", x, __enzyme_fwddiff((void *)counted, x, 1.0), d_counted(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
