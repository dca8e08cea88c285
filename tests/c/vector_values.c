/* GCC/clang vector extensions in the active path (issue 24 item 3: small float vectors
   are values that carry derivatives, lane by lane): vectors loaded from and stored to
   active memory, lane-wise + - * / and negation, lanes read and written by index,
   __builtin_shufflevector, float lanes widened to double and back, and a float vector
   through a non-inlined function. Checked
   against central differences, reverse and forward mode. */
#include <math.h>
#include <stdio.h>

typedef double v2 __attribute__((vector_size(16)));
typedef double v4 __attribute__((vector_size(32)));
typedef float f4 __attribute__((vector_size(16)));

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern float __enzyme_fwddiff_float(void *, ...) __asm__("__enzyme_fwddiff");
extern int enzyme_dup, enzyme_const;

static int failures = 0;

/* y[0..3] = some lane-wise arithmetic of x[0..3] */
static void lanes(const double *x, double *y) {
  v4 a = *(const v4 *)x;
  v4 b = a * a - a / (a + 3.0);
  v4 c = __builtin_shufflevector(b, a, 3, 0, 5, 5);
  v2 lo = {c[0] + c[2], -c[1]};
  c[3] = lo[0] * lo[1] + c[3];
  *(v4 *)y = c * b;
}

__attribute__((noinline)) static f4 scale(f4 v, float s) { return v * s + v / (s + 1.0f); }

static float through_call(const float *x) {
  f4 v = *(const f4 *)x;
  f4 w = scale(v, x[0]);
  return w[0] * w[1] + w[2] - w[3] * v[2];
}

/* float lanes widened to double and back (__builtin_convertvector: fpext/fptrunc on vectors) */
typedef double d4 __attribute__((vector_size(32)));
static float widened(const float *x) {
  f4 v = *(const f4 *)x;
  d4 w = __builtin_convertvector(v, d4);
  w = w * w + 1.0;
  f4 back = __builtin_convertvector(w, f4);
  return back[0] * back[1] + back[2] - back[3] * v[3];
}

static void check(const char *what, double got, double want, double tol) {
  int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s: got %.10g want %.10g\n", ok ? "ok" : "FAIL", what, got, want);
}

int main(void) {
  double x[4] = {0.5, 1.25, -0.75, 2.0}, y[4];
  /* reverse: the gradient of y[k] for each k, against differences */
  for (int k = 0; k < 4; k++) {
    double dx[4] = {0}, dy[4] = {0};
    dy[k] = 1.0;
    __enzyme_autodiff((void *)lanes, enzyme_dup, x, dx, enzyme_dup, y, dy);
    for (int i = 0; i < 4; i++) {
      double h = 1e-6, xp[4], xm[4], yp[4], ym[4];
      for (int j = 0; j < 4; j++) xp[j] = xm[j] = x[j];
      xp[i] += h; xm[i] -= h;
      lanes(xp, yp); lanes(xm, ym);
      char what[64];
      snprintf(what, sizeof what, "lanes reverse dy%d/dx%d", k, i);
      check(what, dx[i], (yp[k] - ym[k]) / (2 * h), 1e-6);
      /* forward: the column i of the Jacobian */
      double tx[4] = {0}, ty[4] = {0};
      tx[i] = 1.0;
      __enzyme_fwddiff((void *)lanes, enzyme_dup, x, tx, enzyme_dup, y, ty);
      snprintf(what, sizeof what, "lanes forward dy%d/dx%d", k, i);
      check(what, ty[k], (yp[k] - ym[k]) / (2 * h), 1e-6);
    }
  }
  float xf[4] = {0.5f, 1.25f, -0.75f, 2.0f}, dxf[4] = {0};
  __enzyme_autodiff((void *)through_call, enzyme_dup, xf, dxf);
  for (int i = 0; i < 4; i++) {
    float h = 1e-2f, xp[4], xm[4];
    for (int j = 0; j < 4; j++) xp[j] = xm[j] = xf[j];
    xp[i] += h; xm[i] -= h;
    double fd = ((double)through_call(xp) - (double)through_call(xm)) / (2 * h);
    float tf[4] = {0};
    tf[i] = 1.0f;
    char what[64];
    snprintf(what, sizeof what, "through_call reverse d/dx%d", i);
    check(what, dxf[i], fd, 2e-3);
    snprintf(what, sizeof what, "through_call forward d/dx%d", i);
    check(what, __enzyme_fwddiff_float((void *)through_call, enzyme_dup, xf, tf), fd, 2e-3);
  }
  float dwf[4] = {0};
  __enzyme_autodiff((void *)widened, enzyme_dup, xf, dwf);
  for (int i = 0; i < 4; i++) {
    float h = 1e-2f, xp[4], xm[4];
    for (int j = 0; j < 4; j++) xp[j] = xm[j] = xf[j];
    xp[i] += h; xm[i] -= h;
    double fd = ((double)widened(xp) - (double)widened(xm)) / (2 * h);
    float tf[4] = {0};
    tf[i] = 1.0f;
    char what[64];
    snprintf(what, sizeof what, "widened reverse d/dx%d", i);
    check(what, dwf[i], fd, 2e-3);
    snprintf(what, sizeof what, "widened forward d/dx%d", i);
    check(what, __enzyme_fwddiff_float((void *)widened, enzyme_dup, xf, tf), fd, 2e-3);
  }
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
