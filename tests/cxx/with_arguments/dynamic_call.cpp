// A function pointer chosen at run time (from the command line) called on active
// data: no compiler can know the callee. zymase differentiates the call as a choice
// between the functions whose address the file takes (square, sine), and prints the
// derivative for the one chosen (issue 24 item 3; tests/test_cxx_programs.py runs it
// with and without an argument).
#include <cmath>
#include <cstdio>
#include <cstdlib>

extern double __enzyme_autodiff(void *, ...);

static double square(double v) { return v * v; }
static double sine(double v) { return std::sin(v); }

double (*volatile chosen)(double) = square;

namespace physics {
double energy(double x) {
  return chosen(x) * 2.0;
}
}  // namespace physics

int main(int argc, char **argv) {
  if (argc > 1 && std::atoi(argv[1]) == 1) chosen = sine;
  std::printf("%.17g\n", __enzyme_autodiff((void *)physics::energy, 1.5));
  return 0;
}
