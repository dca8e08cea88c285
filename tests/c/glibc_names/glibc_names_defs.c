/* Definitions standing in for glibc's internal libm names, linked with libm_glibc_names.c and built
   separately (a second translation unit: zymase differentiates the calls by their rules, not these
   bodies). On this glibc the *_finite symbols exist only as compat versions (GLIBC_2.15) that a new
   program cannot link against, and __sincos / __exp10 are not exported; each forwards to the public
   function computing the same value. */
#define _GNU_SOURCE
#include <math.h>

#define FORWARD1(fn)                                                        \
    double __##fn##_finite(double x) { return fn(x); }                      \
    float __##fn##f_finite(float x) { return fn##f(x); }                    \
    long double __##fn##l_finite(long double x) { return fn##l(x); }
#define FORWARD2(fn)                                                                          \
    double __##fn##_finite(double x, double y) { return fn(x, y); }                          \
    float __##fn##f_finite(float x, float y) { return fn##f(x, y); }                         \
    long double __##fn##l_finite(long double x, long double y) { return fn##l(x, y); }

FORWARD1(acos) FORWARD1(acosh) FORWARD1(asin) FORWARD1(atanh) FORWARD1(cosh) FORWARD1(exp)
FORWARD1(exp10) FORWARD1(exp2) FORWARD1(log) FORWARD1(log10) FORWARD1(log2) FORWARD1(sinh)
FORWARD1(sqrt)
FORWARD2(atan2) FORWARD2(fmod) FORWARD2(hypot) FORWARD2(pow)

double __exp10(double x) { return exp10(x); }
float __exp10f(float x) { return exp10f(x); }
long double __exp10l(long double x) { return exp10l(x); }
void __sincos(double x, double *s, double *c) { sincos(x, s, c); }
void __sincosf(float x, float *s, float *c) { sincosf(x, s, c); }
void __sincosl(long double x, long double *s, long double *c) { sincosl(x, s, c); }
