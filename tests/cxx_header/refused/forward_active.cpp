// expect-error: enzyme::Active arguments are for reverse mode
// Forward mode has no adjoint to return for an Active argument (issue 24 item 4).
#include <enzyme/enzyme>
double square(double x) { return x * x; }
int main() {
  auto t = enzyme::autodiff<enzyme::Forward>(square, enzyme::Active{2.0});
  (void)t;
  return 0;
}
