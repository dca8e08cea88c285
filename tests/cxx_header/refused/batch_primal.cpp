// expect-error: enzyme::BatchDuplicated (vector mode) returns no primal result
// Vector mode has no primal-returning form in the header (issue 25 item 2): refused at
// compile time, never lowered to something else.
#include <enzyme/enzyme>
double square(double x) { return x * x; }
int main() {
  double x = 2.0, d1 = 1.0, d2 = 0.0;
  auto t = enzyme::autodiff<enzyme::ForwardWithPrimal>(square, enzyme::BatchDuplicated<double, 2>(x, d1, d2));
  (void)t;
  return 0;
}
