/* Rounding to an integer by adding and subtracting a large constant, as musl's exp and rint,
   fdlibm's TWO52 (also read from its table by the sign bit) and Cephes-style range reductions write it: (a + 0x1.8p52) - 0x1.8p52 is
   rint(a) in double (0x1.8p23 in float), since the sum has no fraction bits left. Its derivative
   is 0, like rint's; differentiated operation by operation the pair was the identity and gave a's
   derivative, silently (session 34). Then exp by range reduction on that rounding:
   k = rint(x / ln2), r = x - k ln2, exp(r) by its Taylor polynomial, scaled by ldexp(., k):
   d/dx = exp(x) to the polynomial's accuracy; and with 2^k made on the bits from the integer k
   (piecewise constant: right, where the bits of an integer rounded from x put into a mantissa
   are refused). Reverse and forward mode, against closed forms
   (the points keep 3x and x / ln2 away from half-integers). The functions are compiled with
   precise floating point under -ffast-math too (#pragma float_control), which would otherwise
   fold the rounding away in the program itself. */
#include <stdio.h>
#include <math.h>
#include <stdint.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
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
/* the rounding is the program's meaning: -ffast-math would fold (a + C) - C to a */
#pragma float_control(precise, on, push)
#define SHIFT 0x1.8p52
#define LN2 0.6931471805599453

/* k = rint(3x); sin(3x - k) + k x: d/dx = 3 cos(3x - k) + k */
static double f_rint(double x) {
    double k = (x * 3.0 + SHIFT) - SHIFT;
    return sin(x * 3.0 - k) + k * x;
}
/* the sum kept in a volatile local (fdlibm's STRICT_ASSIGN): refused as a volatile access
   before session 34, and silently a's derivative once volatile locals were allowed */
static double f_rint_volatile(double x) {
    volatile double t = x * 3.0 + SHIFT;
    double k = t - SHIFT;
    return sin(x * 3.0 - k) + k * x;
}
/* the shift written as the other operand, and subtracted first */
static double f_rint_swapped(double x) {
    double k = (SHIFT + x * x) - SHIFT, m = (x - SHIFT) + SHIFT;
    return k * x + m * m;
}
/* k x + x: k's adjoint term meets the seed's 1 in an adjoint sum, which may reassociate;
   LLVM took that as leave to reassociate into the rounding ((a + C) - C + 1 became
   a + (1 - C), then a * a + 1 from fmuladd(a, a, C)): x * x + 1 for rint(x * x) + 1 at
   -O1..-O3, silently, until the rounded value was fenced (session 34) */
static double f_rint_plus(double x) {
    double k = (SHIFT + x * x) - SHIFT;
    return k * x + x;
}
/* fdlibm's rint: the shift read from a table by the sign bit, TWO52[sx], the same element
   added and subtracted (rint's argument's derivative at every level, silently, until
   session 35); and a table of small values, which rounds nothing: a's derivative stays */
static const double TWO52[2] = {4.50359962737049600000e+15, -4.50359962737049600000e+15};
static const double SMALL[2] = {0.5, -0.5};
static double f_rint_table(double x) {
    double a = x * x - 2.0;
    int sx = signbit(a) != 0;  /* (fdlibm reads it from the high word) */
    double w = TWO52[sx] + a;
    double k = w - TWO52[sx];
    return k * x + x;
}
static double f_small_table(double x) {
    int s = x < 0;
    double k = (x * x + SMALL[s]) - SMALL[s];
    return k * x;
}
static float f_rintf(float x) {
    float k = (x * 3.0f + 0x1.8p23f) - 0x1.8p23f;
    return sinf(x * 3.0f - k) + k * x;
}
/* exp(x) by range reduction */
static double f_exp(double x) {
    double kd = (x * (1.0 / LN2) + SHIFT) - SHIFT;
    double r = x - kd * LN2, p = 1.0, t = 1.0;
    for (int i = 1; i < 16; i++) {
        t *= r / i;
        p += t;
    }
    return ldexp(p, (int)kd);
}
/* the same scaled by 2^k built on the bits: an integer put into the exponent field only */
static double f_exp_bits(double x) {
    double kd = (x * (1.0 / LN2) + SHIFT) - SHIFT;
    double r = x - kd * LN2, p = 1.0, t = 1.0;
    for (int i = 1; i < 16; i++) {
        t *= r / i;
        p += t;
    }
    union { double d; uint64_t u; } scale;
    scale.u = (uint64_t)((int64_t)kd + 1023) << 52;
    return p * scale.d;
}
#pragma float_control(pop)

static void test(double x) {
    double k = rint(3.0 * x), want = 3.0 * cos(3.0 * x - k) + k;
    check("rint by shift reverse", x, __enzyme_autodiff((void *)f_rint, x), want, TOL);
    check("rint by shift forward", x, __enzyme_fwddiff((void *)f_rint, x, 2.0), 2.0 * want, TOL);
    check("volatile shift reverse", x, __enzyme_autodiff((void *)f_rint_volatile, x), want, TOL);
    check("volatile shift forward", x, __enzyme_fwddiff((void *)f_rint_volatile, x, 2.0), 2.0 * want, TOL);
    want = rint(x * x);
    check("swapped reverse", x, __enzyme_autodiff((void *)f_rint_swapped, x), want, TOL);
    check("swapped forward", x, __enzyme_fwddiff((void *)f_rint_swapped, x, 2.0), 2.0 * want, TOL);
    want = rint(x * x) + 1.0;
    check("rint plus seed reverse", x, __enzyme_autodiff((void *)f_rint_plus, x), want, TOL);
    check("rint plus seed forward", x, __enzyme_fwddiff((void *)f_rint_plus, x, 2.0), 2.0 * want, TOL);
    want = rint(x * x - 2.0) + 1.0;
    check("shift from a table reverse", x, __enzyme_autodiff((void *)f_rint_table, x), want, TOL);
    check("shift from a table forward", x, __enzyme_fwddiff((void *)f_rint_table, x, 2.0), 2.0 * want, TOL);
    want = 3.0 * x * x;  /* ((x*x + 0.5) - 0.5) * x rounds nothing away: 3x^2 up to rounding */
    check("small table reverse", x, __enzyme_autodiff((void *)f_small_table, x), want, TOL);
    check("small table forward", x, __enzyme_fwddiff((void *)f_small_table, x, 2.0), 2.0 * want, TOL);
    float xf = (float)x;
    k = rint(3.0 * xf);
    want = 3.0 * cos(3.0 * xf - k) + k;
    check("rintf by shift reverse", x, __enzyme_autodiff_f(f_rintf, xf), want, FTOL);
    check("rintf by shift forward", x, __enzyme_fwddiff_f(f_rintf, xf, 2.0f), 2.0 * want, FTOL);
    check("exp reverse", x, __enzyme_autodiff((void *)f_exp, x), exp(x), TOL);
    check("exp forward", x, __enzyme_fwddiff((void *)f_exp, x, 2.0), 2.0 * exp(x), TOL);
    check("exp by bits reverse", x, __enzyme_autodiff((void *)f_exp_bits, x), exp(x), TOL);
    check("exp by bits forward", x, __enzyme_fwddiff((void *)f_exp_bits, x, 2.0), 2.0 * exp(x), TOL);
}

int main(int argc, char **argv) {
    (void)argv;
    double points[] = {1.3, -2.9, 7.1 * argc, 0.05, -0.8};
    for (unsigned i = 0; i < sizeof points / sizeof points[0]; i++)
        test(points[i]);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
