// Calls through function pointers that no optimizer can resolve, in the active path
// (issue 24 item 3): virtual calls on objects whose class is chosen at run time, in a
// loop; a table of function pointers indexed by data (one entry a libm function); a
// callback kept in a struct; std::shared_ptr, whose control block is released through
// its vtable. zymase differentiates each call as a choice among the functions the
// pointer can reach (transforms/indirect_calls.py).
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const;

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol = 1e-9) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

struct Term {
  virtual ~Term() {}
  virtual double eval(double x) const = 0;
};
struct Square : Term {
  double eval(double x) const override { return x * x; }
};
struct Scaled : Term {
  double k;
  explicit Scaled(double k) : k(k) {}
  double eval(double x) const override { return k * std::exp(x); }
};
struct Shifted : Term {
  double eval(double x) const override { return std::sin(x + 1.0); }
};

// the classes depend on `kinds`, known only at run time
double series(double x, const int *kinds, int n) {
  std::vector<std::unique_ptr<Term>> terms;
  for (int i = 0; i < n; i++) {
    if (kinds[i] == 0) terms.emplace_back(new Square());
    else if (kinds[i] == 1) terms.emplace_back(new Scaled(0.5 * i));
    else terms.emplace_back(new Shifted());
  }
  double s = 0;
  for (const auto &t : terms) s = s * 0.5 + t->eval(x + 0.1 * s);
  return s;
}

static double square(double x) { return x * x; }
static double cube(double x) { return x * x * x; }
static double (*const table[3])(double) = {square, cube, std::cos};

double tabulated(double x, int which) { return table[which](x) + table[(which + 1) % 3](2 * x); }

struct Model {
  double (*link)(double);
  double weight;
};
static double softplus(double z) { return std::log1p(std::exp(z)); }
static double logistic(double z) { return 1.0 / (1.0 + std::exp(-z)); }

double predict(double w, const Model *m) { return m->weight * m->link(w * 3.0); }

struct Particle {
  double x, v;
};
double energy(double x) {
  auto p = std::make_shared<Particle>(Particle{x, 2 * x});
  std::shared_ptr<Particle> q = p;
  return 0.5 * q->v * q->v + std::sin(p->x);
}

static double series_value(double x, const int *kinds, int n) { return series(x, kinds, n); }

int main() {
  const int kinds[] = {2, 0, 1, 1, 0, 2};
  const double xs[] = {0.3, 0.8};
  for (double x : xs) {
    double h = 1e-6;
    double fd = (series_value(x + h, kinds, 6) - series_value(x - h, kinds, 6)) / (2 * h);
    double r = __enzyme_autodiff((void *)series, x, enzyme_const, kinds, enzyme_const, 6);
    double t = __enzyme_fwddiff((void *)series, x, 1.0, enzyme_const, kinds, enzyme_const, 6);
    check("virtual series reverse", x, r, fd, 1e-6);
    check("virtual series forward vs reverse", x, t, r);

    // square(x) + cube(2x), cube(x) + cos(2x), cos(x) + square(2x)
    const double want_tab[3] = {2 * x + 24 * x * x, 3 * x * x - 2 * std::sin(2 * x), -std::sin(x) + 8 * x};
    for (int w = 0; w < 3; w++) {
      check("table reverse", x, __enzyme_autodiff((void *)tabulated, x, w), want_tab[w]);
      check("table forward", x, __enzyme_fwddiff((void *)tabulated, x, 1.0, w), want_tab[w]);
    }

    Model soft = {softplus, 2.0}, logi = {logistic, -1.5};
    double s = logistic(3 * x), e = std::exp(-3 * x);
    check("callback softplus reverse", x, __enzyme_autodiff((void *)predict, x, enzyme_const, &soft), 2.0 * 3 * s);
    check("callback logistic forward", x, __enzyme_fwddiff((void *)predict, x, 1.0, enzyme_const, &logi),
          -1.5 * 3 * e / ((1 + e) * (1 + e)));

    check("shared_ptr reverse", x, __enzyme_autodiff((void *)energy, x), 4 * x + std::cos(x));
    check("shared_ptr forward", x, __enzyme_fwddiff((void *)energy, x, 1.0), 4 * x + std::cos(x));
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
