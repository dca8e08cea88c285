// An exception thrown inside a differentiated function while its derivative runs:
// the program must end with zymase's clear message and a nonzero status, never
// continue with a wrong derivative, even though main catches everything (issue 24
// item 3). Run without arguments nothing throws and the derivative is checked; with
// an argument, f throws and tests/test_cxx_programs.py expects the message.
#include <cmath>
#include <cstdio>
#include <stdexcept>

extern double __enzyme_autodiff(void *, ...);

__attribute__((noinline)) double checked_sqrt(double v) {
  if (v < 0) throw std::domain_error("sqrt of a negative number");
  return std::sqrt(v);
}

double f(double x) { return x * checked_sqrt(x - 1.0); }

int main(int argc, char **) {
  double x = argc > 1 ? 0.5 : 2.0;  // x - 1 < 0 throws
  try {
    double got = __enzyme_autodiff((void *)f, x);
    double want = std::sqrt(x - 1.0) + x / (2 * std::sqrt(x - 1.0));
    bool ok = std::fabs(got - want) <= 1e-9 * std::fmax(1.0, std::fabs(want));
    std::printf("%s f' at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", x, got, want);
    return !ok;
  } catch (const std::exception &e) {
    std::printf("FAIL the exception reached main: %s\n", e.what());
    return 0;  // the test expects a nonzero status: reaching here is the bug
  }
}
