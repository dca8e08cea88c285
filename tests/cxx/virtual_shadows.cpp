// Shadows of objects with vtables and of structs holding function pointers, made the
// way Enzyme asks (issue 24 item 1): the shadow object's vtable pointer and the shadow
// callback are __enzyme_virtualreverse of the primal ones. The virtual call and the
// call through the callback are differentiated with the shadow object given as
// enzyme_dup, in reverse and forward mode.
#include <cmath>
#include <cstdio>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
template <typename T> T __enzyme_virtualreverse(T);
extern int enzyme_dup, enzyme_const;

static int failures = 0;
static void check(const char *what, double got, double want) {
  bool ok = std::fabs(got - want) <= 1e-12 * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, got, want);
}

struct Law {
  double k;
  virtual ~Law() {}
  virtual double stress(double strain) const = 0;
};
struct Linear : Law {
  double stress(double e) const override { return k * e; }
};
struct Cubic : Law {
  double stress(double e) const override { return k * e * e * e + std::sin(k); }
};

double response(const Law &law, double e) { return law.stress(e) * 2.0; }

struct Integrand {
  double (*fn)(double, double);
  double scale;
};
static double gauss(double x, double s) { return std::exp(-x * x * s); }
double integrate(const Integrand *in) {
  double sum = 0;
  for (int i = 0; i < 8; i++) sum += in->fn(0.25 * i, in->scale);
  return 0.25 * sum;
}

int main() {
  Law *laws[2] = {new Linear(), new Cubic()};
  Law *shadows[2] = {new Linear(), new Cubic()};
  const double e = 0.7;
  for (int i = 0; i < 2; i++) {
    laws[i]->k = 1.5;
    *(void **)shadows[i] = __enzyme_virtualreverse(*(void **)shadows[i]);
    shadows[i]->k = 0.0;
    __enzyme_autodiff((void *)response, enzyme_dup, laws[i], shadows[i], enzyme_const, e);
    double want = i == 0 ? 2 * e : 2 * (e * e * e + std::cos(1.5));
    check(i == 0 ? "linear dk reverse" : "cubic dk reverse", shadows[i]->k, want);
    shadows[i]->k = 1.0;
    double t = __enzyme_fwddiff((void *)response, enzyme_dup, laws[i], shadows[i], enzyme_const, e);
    check(i == 0 ? "linear dk forward" : "cubic dk forward", t, want);
  }

  Integrand in = {gauss, 0.8}, d_in = {__enzyme_virtualreverse(gauss), 0.0};
  __enzyme_autodiff((void *)integrate, enzyme_dup, &in, &d_in);
  double want = 0;
  for (int i = 0; i < 8; i++) want += -0.25 * (0.25 * i) * (0.25 * i) * std::exp(-0.0625 * i * i * 0.8);
  check("callback dscale reverse", d_in.scale, want);
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
