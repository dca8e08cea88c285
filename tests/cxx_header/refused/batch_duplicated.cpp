// expect-error: enzyme::BatchDuplicated (vector mode, enzyme_width) is not implemented
// Vector mode is refused at compile time, never lowered to something else (issue 24 item 4).
#include <enzyme/enzyme>
double square(double x) { return x * x; }
int main() {
  double x = 2.0, d1 = 1.0, d2 = 0.0;
  auto t = enzyme::autodiff<enzyme::Forward>(square, enzyme::BatchDuplicated<double, 2>(x, d1, d2));
  (void)t;
  return 0;
}
