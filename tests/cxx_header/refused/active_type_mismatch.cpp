// expect-error: an enzyme::Active<T> argument must have the type of f's parameter
// zymase returns derivatives in the parameters' types: reading two doubles as a
// tuple<float, float> would be wrong bytes, so the mismatch is refused (issue 24 item 4).
#include <enzyme/enzyme>
double product(double x, double y) { return x * y; }
int main() {
  auto r = enzyme::autodiff<enzyme::Reverse>(product, enzyme::Active<float>(2.0f), enzyme::Active<float>(3.0f));
  (void)r;
  return 0;
}
