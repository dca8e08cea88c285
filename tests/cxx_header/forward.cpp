// Forward mode through <enzyme/enzyme> (issue 24 item 4): Duplicated scalars, pointers,
// references and a struct by value, Const arguments, a void function with a Duplicated
// output, the return activities DuplicatedNoNeed (the tangent), Duplicated (primal and
// tangent) and Const (the primal), ForwardWithPrimal, a lambda and a function template.
// Every tangent is checked against a closed form, a few also against central differences.
#include <enzyme/enzyme>
#include <math.h>
#include <stdio.h>

static int failures = 0;

static void check(const char* what, double at, double got, double want, double tol) {
  bool ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

double square(double x) { return x * x; }
double mix2(double x, double y) { return sin(x) * y + x * y * y; }
float fprod(float a, float b) { return a * b * b; }
double norm2(const double* v, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += v[i] * v[i];
  return sqrt(s);
}
void scale_into(const double* x, double* y, double k, int n) {
  for (int i = 0; i < n; i++) y[i] = k * x[i] * x[i];
}
int squares_counted(const double* x, double* y, int n) {
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i];
  return n;
}
double by_ref(const double& x) { return exp(x) * x; }
struct pair {
  double p, q;
};
double area(pair s) { return s.p * s.q; }
template <typename T>
T poly(T x) { return 3 * x * x * x - 2 * x + 1; }

static double mix2_at_y(double x) { return mix2(x, 0.75); }
static double central(double (*f)(double), double x) {
  double h = 1e-6;
  return (f(x + h) - f(x - h)) / (2 * h);
}

int main() {
  for (double x = -1.25; x <= 2.0; x += 0.8125) {
    // a float result's tangent, in a one-element tuple
    auto t = enzyme::autodiff<enzyme::Forward>(square, enzyme::Duplicated<double>(x, 1.0));
    check("square' (Forward)", x, enzyme::get<0>(t), 2 * x, 1e-12);

    // two inputs, a direction (dx, dy); one Const
    double y = 0.75, dxs = 0.5, dys = -2.0;
    double dm = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(mix2, enzyme::Duplicated{x, dxs},
                                                                 enzyme::Duplicated{y, dys}));
    check("mix2 along (0.5, -2)", x, dm, (cos(x) * y + y * y) * dxs + (sin(x) + 2 * x * y) * dys, 1e-9);
    double dmx = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(mix2, enzyme::Duplicated{x, 1.0},
                                                                  enzyme::Const{y}));
    check("d mix2/dx, y Const", x, dmx, cos(x) * y + y * y, 1e-9);
    check("d mix2/dx vs central difference", x, dmx, central(mix2_at_y, x), 1e-6);

    // float
    float df = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(fprod, enzyme::Duplicated<float>((float)x, 1.0f),
                                                               enzyme::Duplicated<float>(2.0f, 0.5f)));
    check("fprod along (1, 0.5)", x, df, 4.0f + (float)x * 2 * 2.0f * 0.5f, 1e-4);

    // function template and lambda
    check("poly<double>' (Forward)", x,
          enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(poly<double>, enzyme::Duplicated{x, 1.0})),
          9 * x * x - 2, 1e-9);
    auto cubic = [](double s) { return s * s * s + s; };
    check("lambda' (Forward)", x, enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(cubic, enzyme::Duplicated{x, 1.0})),
          3 * x * x + 1, 1e-9);

    // a generic lambda
    auto generic = [](auto s) { return s * s * s; };
    check("generic lambda' (Forward)", x,
          enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(generic, enzyme::Duplicated{x, 1.0})), 3 * x * x, 1e-9);

    // Duplicated return: Enzyme's (primal, tangent)
    auto pt = enzyme::autodiff<enzyme::Forward, enzyme::Duplicated<double>>(cubic, enzyme::Duplicated{x, 2.0});
    check("Duplicated<double> return: primal first", x, enzyme::get<0>(pt), x * x * x + x, 1e-12);
    check("Duplicated<double> return: tangent second", x, enzyme::get<1>(pt), 2 * (3 * x * x + 1), 1e-9);

    // ForwardWithPrimal: (tangent, primal), as ReverseWithPrimal puts the primal last
    auto [tan_w, primal_w] = enzyme::autodiff<enzyme::ForwardWithPrimal>(cubic, enzyme::Duplicated{x, 1.0});
    check("ForwardWithPrimal tangent", x, tan_w, 3 * x * x + 1, 1e-9);
    check("ForwardWithPrimal primal", x, primal_w, x * x * x + x, 1e-12);

    // Const return: the primal alone
    auto pc = enzyme::autodiff<enzyme::Forward, enzyme::Const<double>>(cubic, enzyme::Duplicated{x, 1.0});
    check("Const<double> return: the primal", x, enzyme::get<0>(pc), x * x * x + x, 1e-12);

    // DuplicatedNoNeed spelled out
    auto tn = enzyme::autodiff<enzyme::Forward, enzyme::DuplicatedNoNeed<double>>(square, enzyme::Duplicated{x, 1.0});
    check("DuplicatedNoNeed<double> return: the tangent", x, enzyme::get<0>(tn), 2 * x, 1e-12);

    // the same for plain functions: zymase specializes the header's wrapper on f
    auto [tw2, pw2] = enzyme::autodiff<enzyme::ForwardWithPrimal>(mix2, enzyme::Duplicated{x, 1.0}, enzyme::Const{y});
    check("ForwardWithPrimal of a plain function: tangent", x, tw2, cos(x) * y + y * y, 1e-9);
    check("ForwardWithPrimal of a plain function: primal", x, pw2, mix2(x, y), 1e-12);
    auto pt2 = enzyme::autodiff<enzyme::Forward, enzyme::Duplicated<double>>(square, enzyme::Duplicated{x, 2.0});
    check("Duplicated<double> return of a plain function: primal", x, enzyme::get<0>(pt2), x * x, 1e-12);
    check("Duplicated<double> return of a plain function: tangent", x, enzyme::get<1>(pt2), 4 * x, 1e-12);
    auto pc2 = enzyme::autodiff<enzyme::Forward, enzyme::Const<double>>(square, enzyme::Duplicated{x, 1.0});
    check("Const<double> return of a plain function: the primal", x, enzyme::get<0>(pc2), x * x, 1e-12);

    // a reference
    double dr = 1.0;
    double tr = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(by_ref, enzyme::Duplicated<const double&>(x, dr)));
    check("by_ref' through a reference", x, tr, exp(x) * (x + 1), 1e-9);

    // a struct by value
    double ta = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(area, enzyme::Duplicated{pair{x, 3.0}, pair{1.0, 0.5}}));
    check("area along ((1, 0.5))", x, ta, 3.0 * 1.0 + x * 0.5, 1e-12);
  }

  // pointers: the directional derivative of a norm
  double v[3] = {1.0, -2.0, 2.0}, dv[3] = {0.5, 1.0, 0.0};
  double tn = enzyme::get<0>(enzyme::autodiff<enzyme::Forward>(norm2, enzyme::Duplicated<const double*>(v, dv),
                                                               enzyme::Const<int>(3)));
  check("norm2 along dv", 3.0, tn, (1.0 * 0.5 + -2.0 * 1.0) / 3.0, 1e-12);

  // a void function: the tangent of its output lands in the output's shadow
  double x3[3] = {0.5, -1.0, 2.0}, dx3[3] = {1.0, 1.0, 0.0}, y3[3], dy3[3] = {0, 0, 0};
  double k = 1.5;
  auto none = enzyme::autodiff<enzyme::Forward>(scale_into, enzyme::Duplicated<const double*>(x3, dx3),
                                                enzyme::Duplicated<double*>(y3, dy3), enzyme::Duplicated{k, 2.0},
                                                enzyme::Const<int>(3));
  static_assert(enzyme::tuple_size_v<decltype(none)> == 0, "a void f returns an empty tuple");
  for (int i = 0; i < 3; i++) {
    check("scale_into primal", i, y3[i], k * x3[i] * x3[i], 1e-12);
    check("scale_into tangent", i, dy3[i], 2.0 * x3[i] * x3[i] + k * 2 * x3[i] * dx3[i], 1e-12);
  }

  // an int result: Forward's default return activity is Const, the primal; the tangent
  // of the output still lands in its shadow
  double in[2] = {1.5, -2.0}, din[2] = {1.0, 0.5}, out[2], dout[2] = {0, 0};
  auto count = enzyme::autodiff<enzyme::Forward>(squares_counted, enzyme::Duplicated<const double*>(in, din),
                                                 enzyme::Duplicated<double*>(out, dout), enzyme::Const<int>(2));
  check("int result: the primal", 2, enzyme::get<0>(count), 2, 0);
  for (int i = 0; i < 2; i++) check("squares_counted tangent", i, dout[i], 2 * in[i] * din[i], 1e-12);

  printf("%d failure(s)\n", failures);
  return failures != 0;
}
