// expect-error: in reverse mode enzyme::Duplicated / DuplicatedNoNeed take a pointer or a reference
// A by-value Duplicated argument has nowhere to receive its adjoint (issue 24 item 4).
#include <enzyme/enzyme>
double square(double x) { return x * x; }
int main() {
  double dx = 0;
  enzyme::autodiff<enzyme::Reverse>(square, enzyme::Duplicated<double>(2.0, dx));
  return 0;
}
