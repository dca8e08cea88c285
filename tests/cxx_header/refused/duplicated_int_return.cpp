// expect-error: a Duplicated / DuplicatedNoNeed return needs a floating-point or pointer result
// An int result has no tangent; returning one would be a silent zero (issue 24 item 4).
#include <enzyme/enzyme>
int rounded(double x) { return (int)(x * x); }
int main() {
  auto t = enzyme::autodiff<enzyme::Forward, enzyme::DuplicatedNoNeed<int>>(rounded, enzyme::Duplicated{2.0, 1.0});
  (void)t;
  return 0;
}
