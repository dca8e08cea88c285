/* Small float vectors whose unread lanes are singular (session 33, Eigen probes):
   Eigen's Vector3d::normalized() builds <n2, 0.0> or <poison, n2>, takes llvm.sqrt of the
   vector and divides the components by it; the other lane is 1/0 or sqrt'(0), infinite,
   and its adjoint is zero. Strong zeros must make that lane's term zero, as for scalars,
   or its NaN reaches the lanes that matter. Also llvm.sqrt on a vector (-O0 keeps
   __builtin_elementwise_sqrt whole). Checked against closed forms, reverse and forward. */
#include <emmintrin.h>
#include <math.h>
#include <stdio.h>

typedef double v2 __attribute__((vector_size(16)));

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;

static void check(const char *what, int i, double got, double want) {
  int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s[%d]: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, got, want);
}

/* y / |(x, y, z)|: the vector <x, y> divided by <0, |v|>, lane 0 (x / 0) unread */
static double unit_y(const double *v) {
  double n2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  v2 a = {v[0], v[1]};
  v2 d = {0.0, n2};
  v2 r = __builtin_elementwise_sqrt(d);
  v2 q = a / r;
  return q[1];
}

/* the same the way Eigen's SSE packets write normalized(): numext::sqrt is _mm_sqrt_pd of
   _mm_set_sd (lane 1: sqrt(0)), and the quotient is taken only when the squared norm is
   positive; the optimizer reads lane 1 only and makes the splat divisor <poison, n> */
static double unit_y_sse(const double *v) {
  __m128d a = _mm_loadu_pd(v), sq = _mm_mul_pd(a, a);
  double n2 = _mm_cvtsd_f64(_mm_add_pd(sq, _mm_unpackhi_pd(sq, sq))) + v[2] * v[2];
  if (n2 > 0) {
    double n = _mm_cvtsd_f64(_mm_sqrt_pd(_mm_set_sd(n2)));
    a = _mm_div_pd(a, _mm_set1_pd(n));
  }
  return _mm_cvtsd_f64(_mm_unpackhi_pd(a, a));
}

#define CHECK_BOTH(f, name)                                                        \
  do {                                                                             \
    double x[3] = {v[0], v[1], v[2]}, dx[3] = {0, 0, 0};                           \
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx);                               \
    for (int i = 0; i < 3; i++) check("reverse " name, i, dx[i], want[i]);        \
    for (int i = 0; i < 3; i++) {                                                  \
      double t[3] = {0, 0, 0};                                                     \
      t[i] = 1.0;                                                                  \
      check("forward " name, i, __enzyme_fwddiff((void *)f, enzyme_dup, x, t), want[i]); \
    }                                                                              \
  } while (0)

int main(void) {
  const double points[2][3] = {{0.3, -0.7, 1.1}, {-1.2, 0.4, 0.25}};
  for (int p = 0; p < 2; p++) {
    const double *v = points[p];
    double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    double want[3];
    for (int i = 0; i < 3; i++) want[i] = ((i == 1) / n) - v[1] * v[i] / (n * n * n);
    CHECK_BOTH(unit_y, "unit_y");
    CHECK_BOTH(unit_y_sse, "unit_y_sse");
  }
  return failures != 0;
}
