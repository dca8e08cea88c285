/* libm one-argument float functions (sqrtf ... rintf), reverse and forward, tolerance 1e-4. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* float functions get typed prototypes (a float passed through "..." would become a double) */
extern float __enzyme_autodiff_f(float (*)(float), float);
extern float __enzyme_fwddiff_f(float (*)(float), float, float);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-9

#define FTOL 1e-4

static float f_sqrtf(float x) { return sqrtf(x); }
static float f_cbrtf(float x) { return cbrtf(x); }
static float f_expf(float x) { return expf(x); }
static float f_exp2f(float x) { return exp2f(x); }
static float f_expm1f(float x) { return expm1f(x); }
static float f_logf(float x) { return logf(x); }
static float f_log2f(float x) { return log2f(x); }
static float f_log10f(float x) { return log10f(x); }
static float f_log1pf(float x) { return log1pf(x); }
static float f_sinf(float x) { return sinf(x); }
static float f_cosf(float x) { return cosf(x); }
static float f_tanf(float x) { return tanf(x); }
static float f_asinf(float x) { return asinf(x); }
static float f_acosf(float x) { return acosf(x); }
static float f_atanf(float x) { return atanf(x); }
static float f_sinhf(float x) { return sinhf(x); }
static float f_coshf(float x) { return coshf(x); }
static float f_tanhf(float x) { return tanhf(x); }
static float f_erff(float x) { return erff(x); }
static float f_fabsf(float x) { return fabsf(x) * 3.0f; }
static float f_floorf(float x) { return floorf(x) + x; }
static float f_ceilf(float x) { return ceilf(x) + x; }
static float f_roundf(float x) { return roundf(x) + x; }
static float f_truncf(float x) { return truncf(x) + x; }
static float f_rintf(float x) { return rintf(x) + x; }
static float f_powi(float x) { return __builtin_powif(x, 3); }

/* closed forms, evaluated in double */
static double d_sqrtf(double x) { return 0.5 / sqrt(x); }
static double d_cbrtf(double x) { return 1.0 / (3.0 * cbrt(x) * cbrt(x)); }
static double d_expf(double x) { return exp(x); }
static double d_exp2f(double x) { return exp2(x) * log(2.0); }
static double d_expm1f(double x) { return exp(x); }
static double d_logf(double x) { return 1.0 / x; }
static double d_log2f(double x) { return 1.0 / (x * log(2.0)); }
static double d_log10f(double x) { return 1.0 / (x * log(10.0)); }
static double d_log1pf(double x) { return 1.0 / (1.0 + x); }
static double d_sinf(double x) { return cos(x); }
static double d_cosf(double x) { return -sin(x); }
static double d_tanf(double x) { return 1.0 / (cos(x) * cos(x)); }
static double d_asinf(double x) { return 1.0 / sqrt(1.0 - x * x); }
static double d_acosf(double x) { return -1.0 / sqrt(1.0 - x * x); }
static double d_atanf(double x) { return 1.0 / (1.0 + x * x); }
static double d_sinhf(double x) { return cosh(x); }
static double d_coshf(double x) { return sinh(x); }
static double d_tanhf(double x) { return 1.0 - tanh(x) * tanh(x); }
static double d_erff(double x) { return 2.0 / sqrt(3.14159265358979323846) * exp(-x * x); }
static double d_fabsf(double x) { return x > 0 ? 3.0 : -3.0; }
static double d_floorf(double x) { (void)x; return 1.0; }
static double d_ceilf(double x) { (void)x; return 1.0; }
static double d_roundf(double x) { (void)x; return 1.0; }
static double d_truncf(double x) { (void)x; return 1.0; }
static double d_rintf(double x) { (void)x; return 1.0; }
static double d_powi(double x) { return 3.0 * x * x; }

#define TEST(fn, x)                                                                      \
    do {                                                                                 \
        check(#fn " reverse", x, __enzyme_autodiff_f(f_##fn, x), d_##fn(x), FTOL);       \
        check(#fn " forward", x, __enzyme_fwddiff_f(f_##fn, x, 1.0f), d_##fn(x), FTOL);  \
        check(#fn " forward dx=0.5", x, __enzyme_fwddiff_f(f_##fn, x, 0.5f),             \
              0.5 * d_##fn(x), FTOL);                                                     \
    } while (0)

int main(void) {
    /* exactly representable as float, away from integers, halves and domain edges */
    static const float xs[] = {0.125f, 0.375f, 0.8125f, 1.3125f, 2.625f};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        float x = xs[i];
        TEST(sqrtf, x);
        TEST(cbrtf, x);
        TEST(cbrtf, -x);
        TEST(expf, x);
        TEST(expf, -x);
        TEST(exp2f, x);
        TEST(expm1f, x);
        TEST(expm1f, -x);
        TEST(logf, x);
        TEST(log2f, x);
        TEST(log10f, x);
        TEST(log1pf, x);
        TEST(sinf, x);
        TEST(cosf, -x);
        TEST(tanf, x);
        TEST(atanf, -x);
        TEST(sinhf, x);
        TEST(coshf, -x);
        TEST(tanhf, x);
        TEST(erff, -x);
        TEST(fabsf, x);
        TEST(fabsf, -x);
        TEST(floorf, x);
        TEST(ceilf, -x);
        TEST(roundf, x);
        TEST(truncf, -x);
        TEST(rintf, x);
        TEST(powi, -x);
        if (x < 1.0f) {
            TEST(asinf, x);
            TEST(acosf, -x);
            TEST(log1pf, -x);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
