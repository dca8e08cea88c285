/* Inline assembly of single SIMD min/max instructions, as Eigen 3 writes its SSE/AVX
   pmin/pmax packets under clang (which claims GCC 4.2: EIGEN_COMP_GNUC < 63), an
   asm that is only a comment (EIGEN_ASM_COMMENT), a prefetch, and the count of
   elements before the first 16-byte-aligned one computed from the address (Eigen's
   first_aligned, llvm.smin of address bits): maxCoeff()-style reductions over an array.
   zymase reads maxpd/minpd (and the AVX vmaxpd/vminpd) as the lane-wise compare and
   select they compute. Checked against closed forms (the derivative of a max is the
   indicator of the winning element), reverse and forward mode. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

typedef double v2 __attribute__((vector_size(16)));

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;

static void check(const char *what, int i, double got, double want) {
  int ok = fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s[%d]: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, got, want);
}

static v2 pmax(v2 a, v2 b) {
  v2 res = b; /* Eigen: maxpd %[a], %[res] with res = b: res = b > a ? b : a */
  __asm__("maxpd %[a], %[res]" : [res] "+x"(res) : [a] "x"(a));
  return res;
}

static v2 pmin(v2 a, v2 b) {
  v2 res = b;
  __asm__("minpd %[a], %[res]" : [res] "+x"(res) : [a] "x"(a));
  return res;
}

/* max(x) * 2 + min(x^2) over n doubles: scalars up to the first aligned element, packets
   of two, then the tail, as Eigen's redux does */
static double extremes(const double *x, int n) {
  double mx = x[0], mn = x[0] * x[0];
  int i = 0;
  /* (the count in the loop condition: in a variable, a stack slot with lifetime markers at
     -O2 --no-preopt, the address integer stored there is refused) */
  for (; i < (((uintptr_t)x & 7) != 0 ? n : ((long)(((uintptr_t)x / 8) & 1) < n ? (long)(((uintptr_t)x / 8) & 1) : n));
       i++) {
    mx = x[i] > mx ? x[i] : mx;
    mn = x[i] * x[i] < mn ? x[i] * x[i] : mn;
  }
  v2 vmx = {mx, mx}, vmn = {mn, mn};
  __asm__("#packets");
  for (; i + 2 <= n; i += 2) {
    __builtin_prefetch(x + i + 8);
    v2 p = {x[i], x[i + 1]};
    vmx = pmax(p, vmx);
    vmn = pmin(p * p, vmn);
  }
  mx = vmx[0] > vmx[1] ? vmx[0] : vmx[1];
  mn = vmn[0] < vmn[1] ? vmn[0] : vmn[1];
  for (; i < n; i++) {
    mx = x[i] > mx ? x[i] : mx;
    mn = x[i] * x[i] < mn ? x[i] * x[i] : mn;
  }
  return 2.0 * mx + mn;
}

int main(void) {
  double storage[10] __attribute__((aligned(16)));
  for (int offset = 0; offset < 2; offset++) { /* aligned, and one element past */
    double *x = storage + offset;
    const double values[7] = {0.3, -1.7, 2.2, 0.9, -0.4, 1.1, 0.6};
    int imax = 2, imin = 0; /* the largest element and the one of least square */
    for (int i = 0; i < 7; i++) x[i] = values[i];
    double dx[7] = {0};
    __enzyme_autodiff((void *)extremes, enzyme_dup, x, dx, enzyme_const, 7);
    for (int i = 0; i < 7; i++) {
      double want = (i == imax ? 2.0 : 0.0) + (i == imin ? 2 * values[i] : 0.0);
      check("reverse extremes", i, dx[i], want);
      double t[7] = {0};
      t[i] = 1.0;
      check("forward extremes", i, __enzyme_fwddiff((void *)extremes, enzyme_dup, x, t, enzyme_const, 7), want);
    }
  }
  return failures != 0;
}
