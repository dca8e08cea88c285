/* glibc's internal libm names (issue 24 item 6): the *_finite entry points older glibc headers map
   math functions to under -ffast-math (__exp_finite, __powf_finite, ...), __exp10 and __sincos, in
   double, float and long double, reverse and forward mode, against closed forms. Built together with
   glibc_names_defs.c (see there) by tests/test_c_glibc_names.py. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);
float __enzyme_autodiff_f(float (*)(float), float);
float __enzyme_fwddiff_f(float (*)(float), float, float);

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

/* d_<fn>, f_<fn>, l_<fn>: the double, float and long double forms of __<fn>_finite */
#define UNARY(fn)                                                                 \
    extern double __##fn##_finite(double);                                        \
    extern float __##fn##f_finite(float);                                         \
    extern long double __##fn##l_finite(long double);                             \
    static double d_##fn(double x) { return __##fn##_finite(x); }                 \
    static float f_##fn(float x) { return __##fn##f_finite(x); }                  \
    static double l_##fn(double x) { return (double)__##fn##l_finite(x); }
/* binary: both arguments active in double and long double; float with y fixed to FY */
#define BINARY(fn, FY)                                                                          \
    extern double __##fn##_finite(double, double);                                              \
    extern float __##fn##f_finite(float, float);                                                \
    extern long double __##fn##l_finite(long double, long double);                              \
    static double d_##fn(double x, double y) { return __##fn##_finite(x, y); }                  \
    static float f_##fn(float x) { return __##fn##f_finite(x, FY); }                            \
    static double l_##fn(double x, double y) { return (double)__##fn##l_finite(x, y); }

UNARY(acos) UNARY(acosh) UNARY(asin) UNARY(atanh) UNARY(cosh) UNARY(exp) UNARY(exp10) UNARY(exp2)
UNARY(log) UNARY(log10) UNARY(log2) UNARY(sinh) UNARY(sqrt)
BINARY(atan2, 1.75f) BINARY(fmod, 0.3f) BINARY(hypot, 1.75f) BINARY(pow, 1.75f)

#define TEST_UNARY(fn, x, want)                                                                         \
    do {                                                                                                \
        check("__" #fn "_finite reverse", x, __enzyme_autodiff((void *)d_##fn, x), want, TOL);          \
        check("__" #fn "_finite forward", x, __enzyme_fwddiff((void *)d_##fn, x, 2.0), 2.0 * (want), TOL); \
        check("__" #fn "l_finite reverse", x, __enzyme_autodiff((void *)l_##fn, x), want, TOL);         \
        check("__" #fn "l_finite forward", x, __enzyme_fwddiff((void *)l_##fn, x, 2.0), 2.0 * (want), TOL); \
        check("__" #fn "f_finite reverse", x, __enzyme_autodiff_f(f_##fn, (float)(x)), want, FTOL);    \
        check("__" #fn "f_finite forward", x, __enzyme_fwddiff_f(f_##fn, (float)(x), 2.0f), 2.0 * (want), FTOL); \
    } while (0)
/* want_dx, want_dy: the partials at (x, y); want_fdx: the partial in x at (x, FY) for the float form */
#define TEST_BINARY(fn, x, y, want_dx, want_dy, want_fdx)                                                              \
    do {                                                                                                \
        grad2 g = __enzyme_autodiff2((void *)d_##fn, x, y);                                            \
        check("__" #fn "_finite d/dx", x, g.dx, want_dx, TOL);                                               \
        check("__" #fn "_finite d/dy", x, g.dy, want_dy, TOL);                                               \
        check("__" #fn "_finite forward", x, __enzyme_fwddiff((void *)d_##fn, x, 1.0, y, -0.5),         \
              (want_dx) - 0.5 * (want_dy), TOL);                                                                  \
        g = __enzyme_autodiff2((void *)l_##fn, x, y);                                                  \
        check("__" #fn "l_finite d/dx", x, g.dx, want_dx, TOL);                                              \
        check("__" #fn "l_finite d/dy", x, g.dy, want_dy, TOL);                                              \
        check("__" #fn "l_finite forward", x, __enzyme_fwddiff((void *)l_##fn, x, 1.0, y, -0.5),        \
              (want_dx) - 0.5 * (want_dy), TOL);                                                                  \
        check("__" #fn "f_finite reverse", x, __enzyme_autodiff_f(f_##fn, (float)(x)), want_fdx, FTOL);     \
        check("__" #fn "f_finite forward", x, __enzyme_fwddiff_f(f_##fn, (float)(x), 2.0f), 2.0 * (want_fdx), FTOL); \
    } while (0)

extern double __exp10(double);
extern float __exp10f(float);
extern long double __exp10l(long double);
extern void __sincos(double, double *, double *);
extern void __sincosf(float, float *, float *);
extern void __sincosl(long double, long double *, long double *);

static double exp10_d(double x) { return __exp10(x); }
static float exp10_f(float x) { return __exp10f(x); }
static double exp10_l(double x) { return (double)__exp10l(x); }
/* s c^2: d/dx = c^3 - 2 s^2 c */
static double sincos_d(double x) { double s, c; __sincos(x, &s, &c); return s * c * c; }
static float sincos_f(float x) { float s, c; __sincosf(x, &s, &c); return s * c * c; }
static double sincos_l(double x) { long double s, c; __sincosl(x, &s, &c); return (double)(s * c * c); }

static void test(double x) {
    double one_minus = 1.0 - x * x, x1 = x + 1.0, L2 = log(2.0), L10 = log(10.0);
    TEST_UNARY(acos, x, -1.0 / sqrt(one_minus));
    TEST_UNARY(asin, x, 1.0 / sqrt(one_minus));
    TEST_UNARY(atanh, x, 1.0 / one_minus);
    TEST_UNARY(acosh, x1, 1.0 / sqrt(x1 * x1 - 1.0));
    TEST_UNARY(cosh, x, sinh(x));
    TEST_UNARY(sinh, x, cosh(x));
    TEST_UNARY(exp, x, exp(x));
    TEST_UNARY(exp2, x, L2 * exp2(x));
    TEST_UNARY(exp10, x, L10 * pow(10.0, x));
    TEST_UNARY(log, x, 1.0 / x);
    TEST_UNARY(log2, x, 1.0 / (x * L2));
    TEST_UNARY(log10, x, 1.0 / (x * L10));
    TEST_UNARY(sqrt, x, 0.5 / sqrt(x));

    double y = 1.75, r2 = x * x + y * y, fy = 0.3;
    TEST_BINARY(atan2, x, y, y / r2, -x / r2, y / r2);
    TEST_BINARY(hypot, x, y, x / sqrt(r2), y / sqrt(r2), x / sqrt(r2));
    TEST_BINARY(pow, x, y, y * pow(x, y - 1.0), pow(x, y) * log(x), y * pow(x, y - 1.0));
    TEST_BINARY(fmod, x, fy, 1.0, -trunc(x / fy), 1.0);

    double want = L10 * pow(10.0, x);
    check("__exp10 reverse", x, __enzyme_autodiff((void *)exp10_d, x), want, TOL);
    check("__exp10 forward", x, __enzyme_fwddiff((void *)exp10_d, x, 1.0), want, TOL);
    check("__exp10l reverse", x, __enzyme_autodiff((void *)exp10_l, x), want, TOL);
    check("__exp10l forward", x, __enzyme_fwddiff((void *)exp10_l, x, 1.0), want, TOL);
    check("__exp10f reverse", x, __enzyme_autodiff_f(exp10_f, (float)x), want, FTOL);
    check("__exp10f forward", x, __enzyme_fwddiff_f(exp10_f, (float)x, 1.0f), want, FTOL);

    double s = sin(x), c = cos(x), dsc = c * c * c - 2.0 * s * s * c;
    check("__sincos reverse", x, __enzyme_autodiff((void *)sincos_d, x), dsc, TOL);
    check("__sincos forward", x, __enzyme_fwddiff((void *)sincos_d, x, 1.0), dsc, TOL);
    check("__sincosl reverse", x, __enzyme_autodiff((void *)sincos_l, x), dsc, TOL);
    check("__sincosl forward", x, __enzyme_fwddiff((void *)sincos_l, x, 1.0), dsc, TOL);
    check("__sincosf reverse", x, __enzyme_autodiff_f(sincos_f, (float)x), dsc, FTOL);
    check("__sincosf forward", x, __enzyme_fwddiff_f(sincos_f, (float)x, 1.0f), dsc, FTOL);
}

int main(int argc, char **argv) {
    (void)argv;
    /* exact in float; inside (0, 1), where every function above is smooth */
    double points[] = {0.375, 0.8125 * argc};
    for (int i = 0; i < 2; i++) test(points[i]);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
