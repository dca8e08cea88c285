// std::fill of zeros over the tail of a std::vector<double> in the active path: clang makes
// it a memset whose length is the vector's end minus the fill's start, computed from the
// addresses as integers. That size was refused at -O1 and above as "the address of memory
// being differentiated is handed on as an integer" (c++-stl fuzz seed 975601); a byte count
// of memset/memcpy/memmove cannot become a pointer again. Reverse and forward mode, against
// closed forms; the sizes come from argc so nothing folds.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

extern int enzyme_dup, enzyme_const;
extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, int i, double got, double want) {
  bool ok = std::fabs(got - want) <= 1e-10 * std::fmax(1.0, std::fabs(want));
  if (!ok) failures++;
  std::printf("%s %s [%d]: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, got, want);
}

// c = x[0..n) with c[k..n) zeroed, then sum_j (j + 1) * c[j]^2 + c[0] * c[n-1] (a product
// that reads a zeroed element when k < n)
static double fill_tail(double *x, int n, int k) {
  std::vector<double> c(x, x + n);
  std::fill(c.begin() + k, c.end(), 0.0);
  double r = 0;
  for (size_t j = 0; j < c.size(); j++) r += (j + 1) * c[j] * c[j];
  return r + c[0] * c[n - 1];
}

static double d_fill_tail(const double *x, int n, int k, int i) {
  if (i >= k) return 0.0;
  double d = 2.0 * (i + 1) * x[i];
  if (i == 0 && n - 1 < k) d += x[n - 1];
  if (i == n - 1 && n - 1 < k) d += x[0];
  return d;
}

int main(int argc, char **argv) {
  (void)argv;
  int n = 5 + argc, k = 2 + argc;  // 6 and 3 when run without arguments
  double x[8], dx[8], tx[8];
  for (int i = 0; i < n; i++) x[i] = 0.3 + 0.2 * i;
  for (int all = 0; all < 2; all++) {
    int kk = all ? n : k;  // also a fill of nothing (k == n)
    for (int i = 0; i < n; i++) dx[i] = 0;
    __enzyme_autodiff((void *)fill_tail, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, kk);
    for (int i = 0; i < n; i++) check(all ? "reverse fill nothing" : "reverse fill tail", i, dx[i], d_fill_tail(x, n, kk, i));
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) tx[j] = j == i;
      double t = __enzyme_fwddiff((void *)fill_tail, enzyme_dup, x, tx, enzyme_const, n, enzyme_const, kk);
      check(all ? "forward fill nothing" : "forward fill tail", i, t, d_fill_tail(x, n, kk, i));
    }
  }
  return failures != 0;
}
