/* SSE2 intrinsics in the active path (<emmintrin.h>, x86-64's baseline, as hand-vectorized
   C writes it): _mm_loadu_pd/_mm_storeu_pd, _mm_add/sub/mul/div_pd, _mm_shuffle_pd and
   _mm_max_pd/_mm_min_pd, which are the x86 intrinsics llvm.x86.sse2.max.pd/min.pd
   (lane by lane a > b ? a : b and a < b ? a : b); and clang's __builtin_elementwise_abs and
   _copysign on the same vectors (llvm.fabs.v2f64, llvm.copysign.v2f64, what _mm_andnot_pd
   with the sign mask becomes at -O1). Session 32: all four were refused ("an active vector
   of floats reaches ..."); they now take fmax's, fmin's, fabs's and copysign's rules. Reverse
   and forward mode against closed forms (the branch each lane takes written out). */
#include <emmintrin.h>
#include <math.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;

static void check(const char *what, int at, double got, double want) {
  int ok = fabs(got - want) <= 1e-10 * fmax(1.0, fabs(want));
  failures += !ok;
  printf("%s %s[%d]: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

/* pairs (x[2k], x[2k+1]): s += max(a*a, 0.3) * w + min(a, 0.4) - a/4 + |a|/2 + copysign(a*a,
   +1 | -1), lane by lane; then the
   lanes are swapped and multiplied: r = s0 * s1 + 2 s1 + x[n-1] */
static double f(const double *x, int n) {
  __m128d s = _mm_set1_pd(0.0);
  for (int i = 0; i + 2 <= n; i += 2) {
    __m128d a = _mm_loadu_pd(x + i);
    __m128d w = _mm_set_pd(2.0, 1.0); /* lane 0: 1, lane 1: 2 */
    s = _mm_add_pd(s, _mm_mul_pd(_mm_max_pd(_mm_mul_pd(a, a), _mm_set1_pd(0.3)), w));
    s = _mm_add_pd(s, _mm_min_pd(a, _mm_set1_pd(0.4)));
    s = _mm_sub_pd(s, _mm_div_pd(a, _mm_set1_pd(4.0)));
    s = _mm_add_pd(s, _mm_mul_pd(__builtin_elementwise_abs(a), _mm_set1_pd(0.5)));
    s = _mm_add_pd(s, __builtin_elementwise_copysign(_mm_mul_pd(a, a), _mm_set_pd(-1.0, 1.0)));
  }
  __m128d t = _mm_shuffle_pd(s, s, 1);
  double out[2];
  _mm_storeu_pd(out, _mm_mul_pd(s, t));
  double lanes[2];
  _mm_storeu_pd(lanes, s);
  return out[0] + 2.0 * lanes[1] + x[n - 1];
}

int main(int argc, char **argv) {
  (void)argv;
  int n = 6 + argc; /* 7: three pairs and a last element */
  double x[8], dx[8] = {0}, t[8] = {0};
  for (int i = 0; i < n; i++) x[i] = 0.35 * i - 0.6 + 0.05 * (i % 3);
  /* closed form: s_l = sum_k max(a_kl^2, 0.3) w_l + min(a_kl, 0.4) - a_kl / 4 for lane l */
  double s[2] = {0, 0}, ds[8][2] = {{0}};
  for (int i = 0; i + 2 <= n; i += 2)
    for (int l = 0; l < 2; l++) {
      double a = x[i + l], w = l + 1.0;
      double sign = l == 0 ? 1.0 : -1.0; /* copysign(a^2, +-1) */
      s[l] += (a * a > 0.3 ? a * a : 0.3) * w + (a < 0.4 ? a : 0.4) - a / 4.0 + 0.5 * fabs(a) + sign * a * a;
      ds[i + l][l] = (a * a > 0.3 ? 2.0 * a * w : 0.0) + (a < 0.4 ? 1.0 : 0.0) - 0.25 + 0.5 * (a > 0 ? 1.0 : -1.0)
                     + sign * 2.0 * a;
    }
  /* r = s0 s1 + 2 s1 + x[n-1]: dr/ds0 = s1, dr/ds1 = s0 + 2 */
  double want[8];
  for (int j = 0; j < n; j++)
    want[j] = ds[j][0] * s[1] + ds[j][1] * (s[0] + 2.0) + (j == n - 1 ? 1.0 : 0.0);
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n);
  for (int j = 0; j < n; j++) check("reverse", j, dx[j], want[j]);
  for (int j = 0; j < n; j++) {
    t[j] = 1.0;
    check("forward", j, __enzyme_fwddiff((void *)f, enzyme_dup, x, t, enzyme_const, n), want[j]);
    t[j] = 0.0;
  }
  printf("%d failures\n", failures);
  return failures != 0;
}
