/* A float's sign bit changed on its bits, as C code writes it on a union or through memcpy:
   xor with the sign bit (-x), and with the other bits (|x|), or with the sign bit (-|x|), and
   copysign by merging one value's magnitude with another's sign; double and float, reverse and
   forward mode. At -O1 and up instcombine makes these fneg/fabs/copysign; at -O0 they reached AD
   as integer operations and were refused (session 34; Enzyme differentiates them). Helpers that
   return a float's bits as an integer or take them back (`uint64_t bits(double)`), called and
   not inlined (-O0, `noinline`), lost the derivative between them, silently. The exponent or
   sign bits read as numbers are piecewise constant (derivative 0) and stay allowed. Points
   avoid zeros of the values whose sign is taken. Built by tests/test_c_float_bits.py (at
   -O2 --no-preopt, where the bits stay in stack slots, the program is refused). */
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

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
#define SIGN 0x8000000000000000ull

/* -sin(x) * x: d = -cos(x) x - sin(x) */
static double f_xor(double x) {
    double y = sin(x);
    uint64_t u;
    memcpy(&u, &y, sizeof u);
    u ^= SIGN;
    memcpy(&y, &u, sizeof y);
    return y * x;
}
/* the same through helpers kept as calls */
__attribute__((noinline)) static uint64_t bits(double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}
__attribute__((noinline)) static double from_bits(uint64_t u) {
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}
static double f_xor_helpers(double x) { return from_bits(bits(sin(x)) ^ SIGN) * x; }
static double f_copysign_helpers(double x, double y) {
    return from_bits((bits(x * x) & ~SIGN) | (bits(sin(y)) & SIGN)) * y;
}
/* the same through a union */
static double f_xor_union(double x) {
    union { double d; uint64_t u; } a;
    a.d = x * x * x;
    a.u ^= SIGN;
    return a.d + x;
}
/* |x^2 - 2| * x */
static double f_and(double x) {
    double y = x * x - 2.0;
    uint64_t u;
    memcpy(&u, &y, sizeof u);
    u &= ~SIGN;
    memcpy(&y, &u, sizeof y);
    return y * x;
}
/* -|x^2 - 2| * x */
static double f_or(double x) {
    union { double d; uint64_t u; } a;
    a.d = x * x - 2.0;
    a.u |= SIGN;
    return a.d * x;
}
/* copysign(x^2, sin y) * y */
static double f_copysign(double x, double y) {
    double m = x * x, s = sin(y), r;
    uint64_t um, us;
    memcpy(&um, &m, sizeof um);
    memcpy(&us, &s, sizeof us);
    um = (um & ~SIGN) | (us & SIGN);
    memcpy(&r, &um, sizeof r);
    return r * y;
}
static float f_xorf(float x) {
    float y = x * x * x;
    uint32_t u;
    memcpy(&u, &y, sizeof u);
    u ^= 0x80000000u;
    memcpy(&y, &u, sizeof y);
    return y * x;
}
static float f_andf(float x) {
    union { float f; uint32_t u; } a;
    a.f = x * x - 2.0f;
    a.u &= 0x7fffffffu;
    return a.f * x;
}
/* the exponent field and the sign bit read as numbers: piecewise constant */
static double f_exponent(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    double e = (double)(int)((u >> 52) & 0x7ff) - 1023.0, s = (double)(u >> 63);
    return x * x * e + s * x;
}

static double sgn(double v) { return v > 0 ? 1.0 : -1.0; }

static void test(double x, double y) {
    double want = -cos(x) * x - sin(x);
    check("xor sign reverse", x, __enzyme_autodiff((void *)f_xor, x), want, TOL);
    check("xor sign forward", x, __enzyme_fwddiff((void *)f_xor, x, 2.0), 2.0 * want, TOL);
    check("xor helpers reverse", x, __enzyme_autodiff((void *)f_xor_helpers, x), want, TOL);
    check("xor helpers forward", x, __enzyme_fwddiff((void *)f_xor_helpers, x, 2.0), 2.0 * want, TOL);
    want = 1.0 - 3.0 * x * x;
    check("xor union reverse", x, __enzyme_autodiff((void *)f_xor_union, x), want, TOL);
    check("xor union forward", x, __enzyme_fwddiff((void *)f_xor_union, x, 2.0), 2.0 * want, TOL);
    double q = x * x - 2.0;
    want = fabs(q) + sgn(q) * 2.0 * x * x;
    check("and mask reverse", x, __enzyme_autodiff((void *)f_and, x), want, TOL);
    check("and mask forward", x, __enzyme_fwddiff((void *)f_and, x, 2.0), 2.0 * want, TOL);
    check("or sign reverse", x, __enzyme_autodiff((void *)f_or, x), -want, TOL);
    check("or sign forward", x, __enzyme_fwddiff((void *)f_or, x, 2.0), -2.0 * want, TOL);

    double s = sgn(sin(y));
    grad2 g = __enzyme_autodiff2((void *)f_copysign, x, y);
    check("copysign bits d/dx", x, g.dx, s * 2.0 * x * y, TOL);
    check("copysign bits d/dy", y, g.dy, s * x * x, TOL);
    check("copysign bits forward", x, __enzyme_fwddiff((void *)f_copysign, x, 1.0, y, 3.0),
          s * 2.0 * x * y + 3.0 * s * x * x, TOL);
    g = __enzyme_autodiff2((void *)f_copysign_helpers, x, y);
    check("copysign helpers d/dx", x, g.dx, s * 2.0 * x * y, TOL);
    check("copysign helpers d/dy", y, g.dy, s * x * x, TOL);

    float xf = (float)x;
    want = -4.0 * x * x * x;
    check("xorf reverse", x, __enzyme_autodiff_f(f_xorf, xf), want, FTOL);
    check("xorf forward", x, __enzyme_fwddiff_f(f_xorf, xf, 2.0f), 2.0 * want, FTOL);
    want = fabs(q) + sgn(q) * 2.0 * x * x;
    check("andf reverse", x, __enzyme_autodiff_f(f_andf, xf), want, FTOL);
    check("andf forward", x, __enzyme_fwddiff_f(f_andf, xf, 2.0f), 2.0 * want, FTOL);

    int e;
    frexp(x, &e);
    want = 2.0 * x * (e - 1) + (x < 0 ? 1.0 : 0.0);
    check("exponent bits reverse", x, __enzyme_autodiff((void *)f_exponent, x), want, TOL);
    check("exponent bits forward", x, __enzyme_fwddiff((void *)f_exponent, x, 2.0), 2.0 * want, TOL);
}

int main(int argc, char **argv) {
    (void)argv;
    /* exact in float; x^2 - 2 of both signs; sin(y) of both signs */
    double xs[] = {0.75, -1.375, 2.5 * argc, -3.25};
    double ys[] = {0.5, 4.0, -1.25, 2.75};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++)
        test(xs[i], ys[i]);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
