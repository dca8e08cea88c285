// expect-error: a C variadic function
// A variadic plain function cannot be called from the header's wrapper with its
// arguments; asking for its primal value is refused by name (issue 24 item 4).
#include <enzyme/enzyme>
#include <stdarg.h>
double first_squared(int n, ...) {
  va_list ap;
  va_start(ap, n);
  double x = va_arg(ap, double);
  va_end(ap);
  return x * x * n;
}
int main() {
  auto r = enzyme::autodiff<enzyme::ReverseWithPrimal>(first_squared, enzyme::Const<int>(1), enzyme::Active{2.0});
  (void)r;
  return 0;
}
