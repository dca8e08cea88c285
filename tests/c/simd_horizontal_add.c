/* x86 horizontal adds and subtracts of float vectors (_mm_hadd_pd, _mm_hsub_pd, _mm_hadd_ps,
   _mm256_hadd_pd), as Eigen's predux sums its packets with -march=native: lanes summed in
   adjacent pairs within each 128-bit block, the first operand's pairs then the second's.
   Checked against closed forms, reverse and forward mode (the AVX one only where the CPU
   has AVX). */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup;

static int failures = 0;

static void check(const char *what, int i, double got, double want) {
  int ok = fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s[%d]: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, got, want);
}

/* (x0 + x1) + 4 (x2 - x3) + 1.5 (2 x0 x1) + (x1 - x0)(x2 + x3) + 0.5 (x2 + x3) in float */
__attribute__((target("sse3"))) static double sse3(const double *x) {
  __m128d a = _mm_loadu_pd(x), b = _mm_loadu_pd(x + 2);
  __m128d s = _mm_hadd_pd(a, _mm_hsub_pd(b, b)); /* {x0 + x1, 2 (x2 - x3)} */
  __m128d p = _mm_hadd_pd(_mm_mul_pd(a, _mm_shuffle_pd(a, a, 1)), b); /* {2 x0 x1, x2 + x3} */
  __m128 f = _mm_hadd_ps(_mm_set_ps(0, 0, (float)x[1], (float)x[0]), _mm_set_ps(0, 0, (float)x[3], (float)x[2]));
  return s[0] + 2 * s[1] + 1.5 * p[0] + (x[1] - x[0]) * p[1] + (double)f[2] * 0.5; /* f[2] = x2 + x3 */
}

/* the AVX form: per 128-bit block, {a0 + a1, b0 + b1, a2 + a3, b2 + b3} */
__attribute__((target("avx"))) static double avx(const double *x) {
  __m256d a = _mm256_loadu_pd(x), b = _mm256_mul_pd(a, a);
  __m256d h = _mm256_hadd_pd(a, b);
  return h[0] + 2 * h[1] + 3 * h[2] + 4 * h[3];
}

int main(void) {
  double x[4] = {0.7, -1.3, 2.1, 0.4};
  double want[4];
  want[0] = 1 + 3 * x[1] - (x[2] + x[3]);
  want[1] = 1 + 3 * x[0] + (x[2] + x[3]);
  want[2] = 4 + (x[1] - x[0]) + 0.5;
  want[3] = -4 + (x[1] - x[0]) + 0.5;
  double dx[4] = {0};
  __enzyme_autodiff((void *)sse3, enzyme_dup, x, dx);
  for (int i = 0; i < 4; i++) {
    check("reverse sse3", i, dx[i], want[i]);
    double t[4] = {0};
    t[i] = 1;
    check("forward sse3", i, __enzyme_fwddiff((void *)sse3, enzyme_dup, x, t), want[i]);
  }
  if (__builtin_cpu_supports("avx")) {
    double wa[4];
    wa[0] = 1 + 2 * 2 * x[0];
    wa[1] = 1 + 2 * 2 * x[1];
    wa[2] = 3 + 4 * 2 * x[2];
    wa[3] = 3 + 4 * 2 * x[3];
    double da[4] = {0};
    __enzyme_autodiff((void *)avx, enzyme_dup, x, da);
    for (int i = 0; i < 4; i++) {
      check("reverse avx", i, da[i], wa[i]);
      double t[4] = {0};
      t[i] = 1;
      check("forward avx", i, __enzyme_fwddiff((void *)avx, enzyme_dup, x, t), wa[i]);
    }
  }
  return failures != 0;
}
