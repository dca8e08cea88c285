// std::vector<double>::insert and erase in the active path: an insert that reallocates
// (the elements behind the insertion point are copied from begin + (pos - begin), a
// pointer at a run-time byte offset; their derivatives were silently zero at -O1/-O2),
// one that shifts in place (capacity reserved), a range insert and an erase. Reverse
// and forward mode, against closed forms; the sizes come from argc so nothing folds.
#include <cmath>
#include <cstdio>
#include <cstring>
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

// sum_j (j + 1) * c[j] * c[j] with c = x[0..n) and 0.5 inserted at k
static double insert_one(double *x, int n, int k, int reserve) {
  std::vector<double> c;
  if (reserve) c.reserve(n + 1);
  c.assign(x, x + n);
  c.insert(c.begin() + k, 0.5);
  double r = 0;
  for (size_t j = 0; j < c.size(); j++) r += (j + 1) * c[j] * c[j];
  return r;
}

static double d_insert_one(const double *x, int k, int i) {
  int j = i < k ? i : i + 1;  // where x[i] ends up
  return 2.0 * (j + 1) * x[i];
}

// c = x[0..n), then x[0..m) inserted again at k, then the element at e erased;
// sum_j (j + 1) * c[j]^3
static double insert_range_erase(double *x, int n, int m, int k, int e) {
  std::vector<double> c(x, x + n);
  c.insert(c.begin() + k, x, x + m);
  c.erase(c.begin() + e);
  double r = 0;
  for (size_t j = 0; j < c.size(); j++) r += (j + 1) * c[j] * c[j] * c[j];
  return r;
}

static double d_insert_range_erase(const double *x, int n, int m, int k, int e, int i) {
  // rebuild the index map by hand: which input feeds each position of the final vector
  int src[64], len = 0;
  for (int j = 0; j < k; j++) src[len++] = j;
  for (int j = 0; j < m; j++) src[len++] = j;
  for (int j = k; j < n; j++) src[len++] = j;
  for (int j = e; j + 1 < len; j++) src[j] = src[j + 1];
  len--;
  double d = 0;
  for (int j = 0; j < len; j++)
    if (src[j] == i) d += 3.0 * (j + 1) * x[i] * x[i];
  return d;
}

int main(int argc, char **argv) {
  (void)argv;
  const int n = 4 + argc;  // 5 with no arguments
  double x[16], dx[16];
  for (int i = 0; i < n; i++) x[i] = 0.3 + 0.17 * i - 0.05 * i * i;
  for (int reserve = 0; reserve < 2; reserve++) {
    for (int k = 0; k <= n; k += 2) {
      const char *what = reserve ? "insert in place reverse" : "insert reallocating reverse";
      std::memset(dx, 0, sizeof dx);
      __enzyme_autodiff((void *)insert_one, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, k,
                        enzyme_const, reserve);
      for (int i = 0; i < n; i++) check(what, i, dx[i], d_insert_one(x, k, i));
      what = reserve ? "insert in place forward" : "insert reallocating forward";
      for (int i = 0; i < n; i++) {
        std::memset(dx, 0, sizeof dx);
        dx[i] = 1.0;
        double got = __enzyme_fwddiff((void *)insert_one, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, k,
                                      enzyme_const, reserve);
        check(what, i, got, d_insert_one(x, k, i));
      }
    }
  }
  const int m = 2, k = 1 + argc, e = 3;
  std::memset(dx, 0, sizeof dx);
  __enzyme_autodiff((void *)insert_range_erase, enzyme_dup, x, dx, enzyme_const, n, enzyme_const, m,
                    enzyme_const, k, enzyme_const, e);
  for (int i = 0; i < n; i++) check("insert range, erase reverse", i, dx[i], d_insert_range_erase(x, n, m, k, e, i));
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
