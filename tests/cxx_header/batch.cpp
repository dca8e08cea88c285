// Vector mode through <enzyme/enzyme> (issue 25 item 2): enzyme::BatchDuplicated<T, N>
// (x, dx0, ..., dxN-1) and BatchDuplicatedNoNeed, lowered to enzyme_width, N. Forward
// mode returns a float result's N tangents as one tuple element (as Enzyme.jl returns a
// tuple of N), reverse mode an Active argument's N derivatives (each lane's seed of an
// Active result is 1). Scalars, pointers, references, a lambda, class template argument
// deduction, widths 1, 2 and 3; each lane against a Duplicated call with that lane's
// shadows and against closed forms.
#include <enzyme/enzyme>
#include <math.h>
#include <stdio.h>

static int failures = 0;

static void check(const char* what, double at, double got, double want, double tol) {
  bool ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

double mix2(double x, double y) { return sin(x) * y + x * y * y; }
double by_ref(const double& x) { return exp(x) * x; }
double expx(double x) { return exp(x) * x; }
double weighted(const double* v, double a, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += a * v[i] * v[i] + sin(v[i]);
  return s;
}
void scale_into(const double* x, double* y, int n) {
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i] * x[i];
}

int main() {
  for (double x = -1.25; x <= 2.0; x += 0.8125) {
    double y = 0.75;
    // forward, width 3: three directions of (x, y) in one call
    auto t3 = enzyme::autodiff<enzyme::Forward>(mix2, enzyme::BatchDuplicated<double, 3>(x, 1.0, 0.0, 0.5),
                                                enzyme::BatchDuplicated<double, 3>(y, 0.0, 1.0, -2.0));
    double dxs[3] = {1.0, 0.0, 0.5}, dys[3] = {0.0, 1.0, -2.0};
    double got[3] = {enzyme::get<0>(enzyme::get<0>(t3)), enzyme::get<1>(enzyme::get<0>(t3)),
                     enzyme::get<2>(enzyme::get<0>(t3))};
    for (int k = 0; k < 3; k++) {
      double one = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(mix2, enzyme::Duplicated{x, dxs[k]},
                                                                    enzyme::Duplicated{y, dys[k]}));
      check("mix2 width 3 vs Duplicated", x + k, got[k], one, 1e-14);
      check("mix2 width 3 vs closed form", x + k, got[k],
            (cos(x) * y + y * y) * dxs[k] + (sin(x) + 2 * x * y) * dys[k], 1e-12);
    }
    // width 1 and class template argument deduction (BatchDuplicated{x, dx0, dx1})
    auto t1 = enzyme::autodiff<enzyme::Forward>(mix2, enzyme::BatchDuplicated<double, 1>(x, 1.0),
                                                enzyme::BatchDuplicated<double, 1>(y, 0.0));
    check("mix2 width 1", x, enzyme::get<0>(enzyme::get<0>(t1)), cos(x) * y + y * y, 1e-12);
    auto t2 = enzyme::autodiff<enzyme::Forward>(expx, enzyme::BatchDuplicated{x, 1.0, -0.5});
    check("expx width 2 lane 0", x, enzyme::get<0>(enzyme::get<0>(t2)), exp(x) * (x + 1), 1e-12);
    check("expx width 2 lane 1", x, enzyme::get<1>(enzyme::get<0>(t2)), -0.5 * exp(x) * (x + 1), 1e-12);
    // a reference with two shadows
    double r0 = 2.0, r1 = 3.0;
    auto tr = enzyme::autodiff<enzyme::Forward>(by_ref, enzyme::BatchDuplicated<const double&, 2>(x, r0, r1));
    check("by_ref through references lane 0", x, enzyme::get<0>(enzyme::get<0>(tr)), 2 * exp(x) * (x + 1), 1e-12);
    check("by_ref through references lane 1", x, enzyme::get<1>(enzyme::get<0>(tr)), 3 * exp(x) * (x + 1), 1e-12);
    // a lambda (called from the header's wrapper)
    auto cubic = [](double s) { return s * s * s + s; };
    auto tl = enzyme::autodiff<enzyme::Forward>(cubic, enzyme::BatchDuplicated<double, 2>(x, 1.0, 2.0));
    check("lambda width 2 lane 0", x, enzyme::get<0>(enzyme::get<0>(tl)), 3 * x * x + 1, 1e-12);
    check("lambda width 2 lane 1", x, enzyme::get<1>(enzyme::get<0>(tl)), 2 * (3 * x * x + 1), 1e-12);
  }

  // reverse, width 2: v's shadows per lane, a Active (its derivative once per lane)
  const int n = 4;
  double v[n] = {0.5, -1.0, 2.0, 0.25}, d0[n] = {0}, d1[n] = {0}, a = 1.5;
  auto r = enzyme::autodiff<enzyme::Reverse>(weighted, enzyme::BatchDuplicated<const double*, 2>(v, d0, d1),
                                             enzyme::Active<double>(a), enzyme::Const<int>(n));
  auto [da] = enzyme::get<0>(r);
  double w1[n] = {0};
  auto r1 = enzyme::autodiff<enzyme::Reverse>(weighted, enzyme::Duplicated<const double*>(v, w1),
                                              enzyme::Active<double>(a), enzyme::Const<int>(n));
  double want_da = 0;
  for (int i = 0; i < n; i++) want_da += v[i] * v[i];
  check("weighted width 2 da lane 0", 0, enzyme::get<0>(da), want_da, 1e-12);
  check("weighted width 2 da lane 1", 1, enzyme::get<1>(da), want_da, 1e-12);
  check("weighted width 2 da vs Duplicated", 0, enzyme::get<0>(da), enzyme::get<0>(enzyme::get<0>(r1)), 1e-14);
  for (int i = 0; i < n; i++) {
    double want = 2 * a * v[i] + cos(v[i]);
    check("weighted width 2 dv lane 0", i, d0[i], want, 1e-12);
    check("weighted width 2 dv lane 1", i, d1[i], want, 1e-12);
    check("weighted width 2 dv vs Duplicated", i, d0[i], w1[i], 1e-14);
  }

  // reverse, width 3, a void function: y's shadows seeded per lane (BatchDuplicatedNoNeed)
  double x3[n] = {0.5, -1.0, 2.0, 1.5}, y3[n], g[3][n] = {{0}}, s[3][n];
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n; i++) s[k][i] = 1.0 + k - 0.5 * i;
  auto none = enzyme::autodiff<enzyme::Reverse>(
      scale_into, enzyme::BatchDuplicated<const double*, 3>(x3, g[0], g[1], g[2]),
      enzyme::BatchDuplicatedNoNeed<double*, 3>(y3, s[0], s[1], s[2]), enzyme::Const<int>(n));
  (void)none;
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < n; i++)
      check("scale_into width 3 dx", k * n + i, g[k][i], (1.0 + k - 0.5 * i) * 3 * x3[i] * x3[i], 1e-12);

  printf("%d failures\n", failures);
  return failures != 0;
}
