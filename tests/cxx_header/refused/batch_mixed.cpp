// expect-error: every duplicated argument is a BatchDuplicated or BatchDuplicatedNoNeed with as many shadows
// One vector width per call (issue 25 item 2): a Duplicated argument (one shadow) next
// to a BatchDuplicated one is refused at compile time.
#include <enzyme/enzyme>
double mul(double x, double y) { return x * y; }
int main() {
  double x = 2.0, y = 3.0;
  auto t = enzyme::autodiff<enzyme::Forward>(mul, enzyme::BatchDuplicated<double, 2>(x, 1.0, 0.0),
                                             enzyme::Duplicated<double>(y, 1.0));
  (void)t;
  return 0;
}
