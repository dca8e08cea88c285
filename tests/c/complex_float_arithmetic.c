/* C99 float _Complex in the active path (issue 24 item 3). On x86-64 a float complex is
   one <2 x float>: clang calls __mulsc3 and __divsc3 for * and /, and cexpf, clogf,
   csqrtf, cpowf, csinf, ccosf, ctanf, csinhf, ccoshf, ctanhf, cabsf and cargf take and
   return <2 x float>. Each derivative is checked against a central difference of the
   same function in double, in reverse and forward mode. */
#include <complex.h>
#include <math.h>
#include <stdio.h>

extern float __enzyme_autodiff(void *, float);
extern float __enzyme_fwddiff(void *, float, float);

static int failures = 0;

static void check(const char *what, double x, float got, double want) {
  int ok = fabs(got - want) <= 3e-5 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s at %g: got %.8g want %.10g\n", ok ? "ok" : "FAIL", what, x, got, want);
}

static float arithmetic(float x) {
  float complex z = x + 2.0f * I, w = 1.0f + x * x * I;
  return crealf(z * w / (z + 0.5f)) + cimagf(w / z);
}
static double arithmetic_d(double x) {
  double complex z = x + 2.0 * I, w = 1.0 + x * x * I;
  return creal(z * w / (z + 0.5)) + cimag(w / z);
}

static float exp_log_sqrt(float x) {
  float complex z = 0.5f * x + x * I;
  return cimagf(cexpf(z * z)) + crealf(clogf(z + 1.0f)) * cimagf(csqrtf(z - 3.0f * I));
}
static double exp_log_sqrt_d(double x) {
  double complex z = 0.5 * x + x * I;
  return cimag(cexp(z * z)) + creal(clog(z + 1.0)) * cimag(csqrt(z - 3.0 * I));
}

/* at -O2 the product becomes a <2 x float> multiply of a shuffle with an undefined lane:
   the undefined lane must not poison the derivative (transforms/vector_lanes.py) */
static float log_times_sqrt(float x) {
  float complex z = 0.5f * x + x * I;
  return crealf(clogf(z + 1.0f)) * cimagf(csqrtf(z - 3.0f * I));
}
static double log_times_sqrt_d(double x) {
  double complex z = 0.5 * x + x * I;
  return creal(clog(z + 1.0)) * cimag(csqrt(z - 3.0 * I));
}

static float power(float x) { return crealf(cpowf(x + 0.5f * I, 0.7f + x * I)); }
static double power_d(double x) { return creal(cpow(x + 0.5 * I, 0.7 + x * I)); }

static float trig_hyp(float x) {
  float complex z = x + 0.3f * x * I;
  return crealf(csinf(z)) + cimagf(ccosf(z)) + crealf(ctanf(z)) + cimagf(csinhf(z)) + crealf(ccoshf(z))
         + cimagf(ctanhf(z));
}
static double trig_hyp_d(double x) {
  double complex z = x + 0.3 * x * I;
  return creal(csin(z)) + cimag(ccos(z)) + creal(ctan(z)) + cimag(csinh(z)) + creal(ccosh(z)) + cimag(ctanh(z));
}

static float abs_arg(float x) { float complex z = x - 0.2f + (1.0f - x * x) * I; return cabsf(z) * cargf(z); }
static double abs_arg_d(double x) { double complex z = x - 0.2 + (1.0 - x * x) * I; return cabs(z) * carg(z); }

#define CHECK(f, x)                                                                \
  do {                                                                             \
    double h = 1e-6, fd = (f##_d((x) + h) - f##_d((x) - h)) / (2 * h);             \
    check(#f " reverse", x, __enzyme_autodiff((void *)f, (float)(x)), fd);         \
    check(#f " forward", x, __enzyme_fwddiff((void *)f, (float)(x), 1.0f), fd);    \
  } while (0)

int main(void) {
  const double points[] = {0.375, 1.25};
  for (int i = 0; i < 2; i++) {
    double x = points[i];
    CHECK(arithmetic, x);
    CHECK(exp_log_sqrt, x);
    CHECK(log_times_sqrt, x);
    CHECK(power, x);
    CHECK(trig_hyp, x);
    CHECK(abs_arg, x);
  }
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
