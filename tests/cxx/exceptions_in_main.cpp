// The code zymase does not differentiate keeps its exception semantics: main throws,
// catches by type, rethrows and catches again around derivative calls, and a
// destructor runs during unwinding (issue 24 item 3).
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static int destroyed = 0;

struct Noisy {
  ~Noisy() { destroyed++; }
};

__attribute__((noinline)) void fail_if(bool cond, const std::string &why) {
  Noisy n;
  if (cond) throw std::invalid_argument(why);
}

double cube(double x) { return x * x * x; }

static void expect(const char *what, bool ok) {
  if (!ok) failures++;
  std::printf("%s %s\n", ok ? "ok" : "FAIL", what);
}

int main() {
  std::vector<double> xs = {0.5, 1.5};
  int caught = 0;
  for (double x : xs) {
    try {
      double d = __enzyme_autodiff((void *)cube, x);
      expect("cube reverse", std::fabs(d - 3 * x * x) <= 1e-12);
      fail_if(x > 1.0, "too big");
      double t = __enzyme_fwddiff((void *)cube, x, 1.0);
      expect("cube forward", std::fabs(t - 3 * x * x) <= 1e-12);
    } catch (const std::invalid_argument &e) {
      caught++;
      expect("caught the right message", std::string(e.what()) == "too big");
      try {
        throw;
      } catch (const std::logic_error &) {
        caught++;
      }
    } catch (...) {
      expect("no other exception", false);
    }
  }
  expect("caught twice", caught == 2);
  expect("destructors ran", destroyed == 2);
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
