// new/delete, new[]/delete[], std::unique_ptr and std::shared_ptr holding active data and
// std::array in the active path: the allocations get shadows like malloc/free (issue 24
// item 3). Releasing a shared_ptr's last owner calls its control block's _M_dispose
// through the vtable (transforms/indirect_calls.py dispatches it); an array owner and a
// make_shared one in the same function give two control-block types.
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

struct Particle {
  double pos, vel;
};

// new/delete of an object, new[]/delete[] of an array: x^2 + sum_i (i x)^2 = 15 x^2
double raw_heap(double x) {
  Particle *p = new Particle{x, 2 * x};
  double *buf = new double[4];
  for (int i = 0; i < 4; i++) buf[i] = i * x;
  double s = p->pos * p->pos;
  for (int i = 0; i < 4; i++) s += buf[i] * buf[i];
  s += p->vel * std::cos(p->pos);  // 2x cos x
  delete[] buf;
  delete p;
  return s;
}

double d_raw_heap(double x) { return 30 * x + 2 * std::cos(x) - 2 * x * std::sin(x); }

// unique_ptr to an object and to an array, moved from one owner to another
double smart(double x) {
  auto u = std::make_unique<Particle>(Particle{x * x, std::exp(x)});
  auto a = std::make_unique<double>(3 * x);
  std::unique_ptr<double> b = std::move(a);
  *b += x;  // 4x
  a = std::move(b);
  std::unique_ptr<double[]> arr(new double[3]{x, x * x, x * x * x});
  return u->pos * u->vel + *a * arr[2];  // x^2 e^x + 4 x^4
}

double d_smart(double x) { return (2 * x + x * x) * std::exp(x) + 16 * x * x * x; }

// shared_ptr<double[]> (deleter delete[]) beside make_shared<double> (in-place control
// block): a0 a2 + b a1 = x * 3x + 2x * 2x = 7 x^2
double shared(double x) {
  std::shared_ptr<double[]> a(new double[3]);
  auto b = std::make_shared<double>(x * 2);
  for (int i = 0; i < 3; i++) a[i] = x * (i + 1);
  std::shared_ptr<double[]> c = a;
  return c[0] * a[2] + *b * a[1];
}

double d_shared(double x) { return 14 * x; }

// std::array by value and by reference
static double norm2(const std::array<double, 3> &v) { return v[0] * v[0] + v[1] * v[1] + v[2] * v[2]; }

double arrays(double x) {
  std::array<double, 3> v = {x, std::sin(x), 2.0};
  std::array<double, 3> w = v;
  for (double &e : w) e *= x;
  return norm2(v) + norm2(w);  // (1 + x^2)(x^2 + sin^2 x + 4)
}

double d_arrays(double x) {
  double n = x * x + std::sin(x) * std::sin(x) + 4;
  return 2 * x * n + (1 + x * x) * (2 * x + 2 * std::sin(x) * std::cos(x));
}

int main() {
  const double points[] = {0.2, 0.8, 1.5};
  for (double x : points) {
    check("raw_heap reverse", x, __enzyme_autodiff((void *)raw_heap, x), d_raw_heap(x), 1e-9);
    check("raw_heap forward", x, __enzyme_fwddiff((void *)raw_heap, x, 1.0), d_raw_heap(x), 1e-9);
    check("smart reverse", x, __enzyme_autodiff((void *)smart, x), d_smart(x), 1e-9);
    check("smart forward", x, __enzyme_fwddiff((void *)smart, x, 1.0), d_smart(x), 1e-9);
    check("shared reverse", x, __enzyme_autodiff((void *)shared, x), d_shared(x), 1e-9);
    check("shared forward", x, __enzyme_fwddiff((void *)shared, x, 1.0), d_shared(x), 1e-9);
    check("arrays reverse", x, __enzyme_autodiff((void *)arrays, x), d_arrays(x), 1e-9);
    check("arrays forward", x, __enzyme_fwddiff((void *)arrays, x, 1.0), d_arrays(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
