// expect-error: this result needs f's primal value
// zymase's __enzyme_autodiff does not return the primal; for a plain function the header
// cannot call f inside the differentiated code, and calling f a second time could be
// observably different (here: a counter), so it refuses (issue 24 item 4).
#include <enzyme/enzyme>
int calls = 0;
double counted(double x) { calls++; return x * x; }
int main() {
  auto r = enzyme::autodiff<enzyme::ReverseWithPrimal>(counted, enzyme::Active{2.0});
  (void)r;
  return 0;
}
