// Reverse mode through <enzyme/enzyme> (issue 24 item 4): Active scalars (one, two,
// three, float and double mixed), Duplicated pointers, arrays and references, Const
// ints and references (one that f changes), a std::vector, a void function with a
// Duplicated output, return activities, ReverseWithPrimal, lambdas (with and without
// captures), a function object, function pointers and a function template as f. Every
// derivative is checked against a closed form, a few also against central differences.
#include <enzyme/enzyme>
#include <math.h>
#include <stdio.h>

#include <vector>

static int failures = 0;

static void check(const char* what, double at, double got, double want, double tol) {
  bool ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

double cube(double x) { return x * x * x; }
double mix2(double x, double y) { return sin(x) * y + x * y * y; }
double mix3(double x, double y, double z) { return x * y * z + exp(x - z); }
double scaled_pow(double x, int n) { return pow(x, n) * n; }
float fmix(float a, double b) { return a * a * (float)b; }
float fpair(float a, float b) { return a * b + a; }
// three floats come back as { <2 x float>, float } on x86-64, a double and two floats
// as { double, <2 x float> }: the tuple must have the same bytes
float ftriple(float a, float b, float c) { return a * b * 2 + c * c * c; }
double dff(double a, float b, float c) { return a * b + (double)c * a; }
double dot(const double* a, const double* b, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}
// y[i] = x[i]^2 * w, a void function whose output is a Duplicated pointer
void square_into(const double* x, double* y, double w, int n) {
  for (int i = 0; i < n; i++) y[i] = x[i] * x[i] * w;
}
double by_ref(const double& x, double& scale) { return x * x * scale; }
template <typename T>
T poly(T x) { return 3 * x * x * x - 2 * x + 1; }
int ignores(double* x) { x[0] = x[0] * x[0]; return 7; }
int calls = 0;
double counted(double x) {
  calls++;
  return x * x;
}
// writes its Const reference argument: f must run exactly once
float bump(float x, float& y) { return x * (y++); }
double sum_squares(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return s;
}
// a function object: passed to the differentiated wrapper as constant data
struct Affine {
  double a, b;
  double operator()(double x) const { return a * x * x + b * x; }
};

static double central(double (*f)(double), double x) {
  double h = 1e-6;
  return (f(x + h) - f(x - h)) / (2 * h);
}
static double mix2_at_y(double x) { return mix2(x, 1.5); }

int main() {
  for (double x = -1.5; x <= 2.0; x += 0.875) {
    // one Active scalar: the derivative in a one-element tuple inside the result tuple
    auto r = enzyme::autodiff<enzyme::Reverse>(cube, enzyme::Active<double>(x));
    check("cube' (Active<double>)", x, enzyme::get<0>(enzyme::get<0>(r)), 3 * x * x, 1e-9);

    // two Active scalars, class template argument deduction
    double y = 1.5;
    auto g = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(mix2, enzyme::Active{x}, enzyme::Active{y}));
    check("d mix2/dx", x, enzyme::get<0>(g), cos(x) * y + y * y, 1e-9);
    check("d mix2/dy", x, enzyme::get<1>(g), sin(x) + 2 * x * y, 1e-9);
    check("d mix2/dx vs central difference", x, enzyme::get<0>(g), central(mix2_at_y, x), 1e-6);

    // three (returned through memory), one of them Const
    double z = 0.25;
    auto g3 = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(
        mix3, enzyme::Active{x}, enzyme::Active{y}, enzyme::Active{z}));
    check("d mix3/dx", x, enzyme::get<0>(g3), y * z + exp(x - z), 1e-9);
    check("d mix3/dy", x, enzyme::get<1>(g3), x * z, 1e-9);
    check("d mix3/dz", x, enzyme::get<2>(g3), x * y - exp(x - z), 1e-9);
    auto g2c = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(
        mix3, enzyme::Active{x}, enzyme::Const{y}, enzyme::Active{z}));
    check("d mix3/dx, y Const", x, enzyme::get<0>(g2c), y * z + exp(x - z), 1e-9);
    check("d mix3/dz, y Const", x, enzyme::get<1>(g2c), x * y - exp(x - z), 1e-9);
    static_assert(enzyme::tuple_size_v<decltype(g2c)> == 2, "a Const argument has no derivative");

    // Const<int>
    auto gp = enzyme::autodiff<enzyme::Reverse>(scaled_pow, enzyme::Active{x}, enzyme::Const<int>(3));
    check("d scaled_pow/dx, n = 3 Const", x, enzyme::get<0>(enzyme::get<0>(gp)), 9 * x * x, 1e-9);

    // float and double derivatives together: tuple<float, double>
    auto gf = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(fmix, enzyme::Active<float>((float)x),
                                                               enzyme::Active<double>(y)));
    check("d fmix/da (float)", x, enzyme::get<0>(gf), 2 * (float)x * y, 1e-4);
    check("d fmix/db (double)", x, enzyme::get<1>(gf), (float)x * (float)x, 1e-4);
    auto gff = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(fpair, enzyme::Active{(float)x},
                                                                enzyme::Active{(float)y}));
    check("d fpair/da", x, enzyme::get<0>(gff), (float)y + 1, 1e-4);
    check("d fpair/db", x, enzyme::get<1>(gff), (float)x, 1e-4);

    // f as a function pointer variable and as &f
    double (*cube_ptr)(double) = cube;
    check("cube' through a function pointer", x,
          enzyme::get<0>(enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(cube_ptr, enzyme::Active{x}))), 3 * x * x, 1e-9);
    check("cube' through &cube", x,
          enzyme::get<0>(enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(&cube, enzyme::Active{x}))), 3 * x * x, 1e-9);

    float fx = (float)x, fy = 2.0f, fz = -1.0f;
    auto g3f = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(ftriple, enzyme::Active{fx}, enzyme::Active{fy},
                                                                 enzyme::Active{fz}));
    check("d ftriple/da", x, enzyme::get<0>(g3f), 2 * fy, 1e-4);
    check("d ftriple/db", x, enzyme::get<1>(g3f), 2 * fx, 1e-4);
    check("d ftriple/dc", x, enzyme::get<2>(g3f), 3 * fz * fz, 1e-4);
    auto gdff = enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(dff, enzyme::Active{x}, enzyme::Active{fy},
                                                                 enzyme::Active{fz}));
    check("d dff/da (double)", x, enzyme::get<0>(gdff), fy + fz, 1e-9);
    check("d dff/db (float)", x, enzyme::get<1>(gdff), x, 1e-4);
    check("d dff/dc (float)", x, enzyme::get<2>(gdff), x, 1e-4);

    // function template as f
    auto gt = enzyme::autodiff<enzyme::Reverse>(poly<double>, enzyme::Active{x});
    check("poly<double>'", x, enzyme::get<0>(enzyme::get<0>(gt)), 9 * x * x - 2, 1e-9);

    // lambda without captures, and structured bindings
    auto quartic = [](double t, double s) { return t * t * t * t * s; };
    auto [dl] = enzyme::autodiff<enzyme::Reverse>(quartic, enzyme::Active{x}, enzyme::Active{y});
    check("lambda d/dt", x, enzyme::get<0>(dl), 4 * x * x * x * y, 1e-9);
    check("lambda d/ds", x, enzyme::get<1>(dl), x * x * x * x, 1e-9);

    // ReverseWithPrimal (through a lambda): derivatives, then the primal
    auto [dw, primal] = enzyme::autodiff<enzyme::ReverseWithPrimal>(quartic, enzyme::Active{x}, enzyme::Const{y});
    check("ReverseWithPrimal derivative", x, enzyme::get<0>(dw), 4 * x * x * x * y, 1e-9);
    check("ReverseWithPrimal primal", x, primal, x * x * x * x * y, 1e-12);

    // a lambda capturing a value (constant, as in Enzyme) and a function object
    double k = 2.5;
    auto scaled = [k](double t) { return k * t * t; };
    check("capturing lambda'", x, enzyme::get<0>(enzyme::get<0>(enzyme::autodiff<enzyme::Reverse>(scaled, enzyme::Active{x}))),
          2 * k * x, 1e-12);
    Affine af{1.5, -0.5};
    auto [da, pa] = enzyme::autodiff<enzyme::ReverseWithPrimal>(af, enzyme::Active{x});
    check("function object'", x, enzyme::get<0>(da), 3.0 * x - 0.5, 1e-12);
    check("function object primal", x, pa, 1.5 * x * x - 0.5 * x, 1e-12);

    // ReverseWithPrimal of a plain function: f runs once inside the derivative (zymase
    // specializes the header's wrapper on the constant function pointer)
    auto [dp, pp] = enzyme::autodiff<enzyme::ReverseWithPrimal>(mix2, enzyme::Active{x}, enzyme::Const{y});
    check("ReverseWithPrimal of a plain function: derivative", x, enzyme::get<0>(dp), cos(x) * y + y * y, 1e-9);
    check("ReverseWithPrimal of a plain function: primal", x, pp, mix2(x, y), 1e-12);
    auto cc = enzyme::autodiff<enzyme::Reverse, enzyme::Const<double>>(cube, enzyme::Active{x});
    check("Reverse, Const<double> return of a plain function: zero", x, enzyme::get<0>(enzyme::get<0>(cc)), 0.0, 1e-12);

    // the default return activity spelled out, and Const<double>: nothing seeds the result
    auto ra = enzyme::autodiff<enzyme::Reverse, enzyme::Active<double>>(cube, enzyme::Active{x});
    check("Reverse, Active<double> return", x, enzyme::get<0>(enzyme::get<0>(ra)), 3 * x * x, 1e-9);
    auto lcube = [](double t) { return t * t * t; };
    auto rc = enzyme::autodiff<enzyme::Reverse, enzyme::Const<double>>(lcube, enzyme::Active{x});
    check("Reverse, Const<double> return: zero", x, enzyme::get<0>(enzyme::get<0>(rc)), 0.0, 1e-12);
    auto [rcd, rcp] = enzyme::autodiff<enzyme::ReverseWithPrimal, enzyme::Const<double>>(lcube, enzyme::Active{x});
    check("ReverseWithPrimal, Const<double> return: zero", x, enzyme::get<0>(rcd), 0.0, 1e-12);
    check("ReverseWithPrimal, Const<double> return: primal", x, rcp, x * x * x, 1e-12);
  }

  // Duplicated pointers and arrays: the gradient accumulates into the shadows
  double a[3] = {1.0, -2.0, 0.5}, b[3] = {0.25, 3.0, -1.0};
  double da[3] = {0, 0, 0}, db[3] = {10, 10, 10};
  auto none = enzyme::autodiff<enzyme::Reverse>(dot, enzyme::Duplicated<const double*>(a, da),
                                                enzyme::Duplicated<const double*>(b, db), enzyme::Const<int>(3));
  static_assert(enzyme::tuple_size_v<decltype(enzyme::get<0>(none))> == 0, "no Active argument");
  for (int i = 0; i < 3; i++) {
    check("d dot/da[i]", i, da[i], b[i], 1e-12);
    check("d dot/db[i] accumulated onto 10", i, db[i], 10 + a[i], 1e-12);
  }
  // DuplicatedNoNeed: only the shadow matters
  double dn[3] = {0, 0, 0};
  enzyme::autodiff<enzyme::Reverse>(dot, enzyme::DuplicatedNoNeed<const double*>(a, dn),
                                    enzyme::Const<const double*>(b), enzyme::Const<int>(3));
  for (int i = 0; i < 3; i++) check("d dot/da[i], DuplicatedNoNeed", i, dn[i], b[i], 1e-12);

  // a void function with a Duplicated output and an Active scalar
  double x3[3] = {0.5, -1.0, 2.0}, dx3[3] = {0, 0, 0}, y3[3], dy3[3] = {1.0, 2.0, 3.0};
  double w = 1.25;
  auto gw = enzyme::autodiff<enzyme::Reverse>(square_into, enzyme::Duplicated<const double*>(x3, dx3),
                                              enzyme::Duplicated<double*>(y3, dy3), enzyme::Active{w},
                                              enzyme::Const<int>(3));
  double want_dw = 0;
  for (int i = 0; i < 3; i++) {
    check("square_into: primal output written", i, y3[i], x3[i] * x3[i] * w, 1e-12);
    check("square_into: d/dx[i] with seed (1, 2, 3)", i, dx3[i], (i + 1) * 2 * x3[i] * w, 1e-12);
    want_dw += (i + 1) * x3[i] * x3[i];
  }
  check("square_into: d/dw", w, enzyme::get<0>(enzyme::get<0>(gw)), want_dw, 1e-12);

  // references: Duplicated<const double&> and Const<double&>
  double rx = 1.75, drx = 0, scale = 3.0;
  enzyme::autodiff<enzyme::Reverse>(by_ref, enzyme::Duplicated<const double&>(rx, drx), enzyme::Const<double&>(scale));
  check("by_ref: d/dx through a reference", rx, drx, 2 * rx * scale, 1e-12);

  // an int result is Const by default: the Duplicated argument's primal still changes
  double v[1] = {3.0}, dv[1] = {0.0};
  enzyme::autodiff<enzyme::Reverse>(ignores, enzyme::Duplicated<double*>(v, dv));
  check("int result: f ran once", 3.0, v[0], 9.0, 1e-12);
  check("int result: nothing seeded", 3.0, dv[0], 0.0, 1e-12);

  // a Const reference that f changes: one run of f, one increment
  float counter = 5.0f;
  auto gb = enzyme::autodiff<enzyme::Reverse>(bump, enzyme::Active{10.0f}, enzyme::Const<float&>{counter});
  check("bump: d/dx", 10.0, enzyme::get<0>(enzyme::get<0>(gb)), 5.0, 1e-6);
  check("bump: f ran once", 10.0, counter, 6.0, 1e-12);

  // a std::vector by const reference, its shadow another vector (as in Enzyme's tests)
  const std::vector<double> vec{3.0, -4.0, 0.5};
  std::vector<double> dvec(3, 0.0);
  enzyme::autodiff<enzyme::Reverse>(sum_squares, enzyme::DuplicatedNoNeed<const std::vector<double>&>{vec, dvec});
  for (int i = 0; i < 3; i++) check("sum_squares: d/dv[i] of a std::vector", i, dvec[i], 2 * vec[i], 1e-12);

  // ReverseWithPrimal of a plain function that counts its calls: one call
  calls = 0;
  auto [dcount, pcount] = enzyme::autodiff<enzyme::ReverseWithPrimal>(counted, enzyme::Active{1.5});
  check("counted: derivative", 1.5, enzyme::get<0>(dcount), 3.0, 1e-12);
  check("counted: primal", 1.5, pcount, 2.25, 1e-12);
  check("counted: f ran once", 1.5, calls, 1, 0);

  printf("%d failure(s)\n", failures);
  return failures != 0;
}
