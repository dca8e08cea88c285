// expect-error: split reverse mode (enzyme::ReverseSplit) is not implemented
// Split modes are refused at compile time (issue 24 item 4).
#include <enzyme/enzyme>
double square(double x) { return x * x; }
int main() {
  auto r = enzyme::autodiff<enzyme::ReverseSplit>(square, enzyme::Active{2.0});
  (void)r;
  return 0;
}
