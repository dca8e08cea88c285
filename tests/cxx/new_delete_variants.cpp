// The operator new / delete variants clang emits, on memory holding active data:
// std::nothrow new and new[], over-aligned new and new[] (align_val_t), and the sized
// and aligned deletes (issue 24 item 3). Their memory gets a zeroed shadow like malloc's
// (aligned like the primal's), released with the primal.
#include <cmath>
#include <cstdio>
#include <new>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double at, double got, double want, double tol) {
  bool ok = std::fabs(got - want) <= tol * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

struct alignas(64) Lane {
  double v[4];
};

double variants(double x) {
  double *a = new (std::nothrow) double[3];
  double *b = new (std::nothrow) double(x * x);
  Lane *one = new Lane;
  Lane *two = new Lane[2];
  for (int i = 0; i < 3; i++) a[i] = x * i;
  for (int i = 0; i < 4; i++) {
    one->v[i] = a[i % 3] * std::sin(x);
    two[1].v[i] = one->v[i] + *b;
  }
  double s = 0;
  for (int i = 0; i < 4; i++) s += two[1].v[i];
  delete[] a;
  delete b;
  delete one;
  delete[] two;
  return s;  // (0 + 1 + 2 + 0) x sin x + 4 x^2
}

double d_variants(double x) { return 3 * (std::sin(x) + x * std::cos(x)) + 8 * x; }

int main() {
  const double points[] = {0.5, 1.5, 2.5};
  for (double x : points) {
    check("variants reverse", x, __enzyme_autodiff((void *)variants, x), d_variants(x), 1e-9);
    check("variants forward", x, __enzyme_fwddiff((void *)variants, x, 1.0), d_variants(x), 1e-9);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
