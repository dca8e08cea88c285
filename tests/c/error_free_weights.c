/* The error terms of error-free transformations as weights, checked bit for bit. TwoSum,
   Fast2Sum, Veltkamp's split, Dekker's and the fused TwoProduct, Kahan's compensation and a
   double-double sum compute an error term e (about 1e-17 next to 1) exactly; a program that
   weights an input by e, w * e + v * s, has d/dw = e and d/dv = s, bit for bit, and so for e
   as the partial of an active x (e * x, e * x + s * x: e + s rounded) and for Kahan's
   compensation summed in a loop (the terms are multiples of 2^-61: exact in any order). A
   check within 1e-15 of 1 cannot see e replaced by 0: these compare with ==, printing both
   with %a. Two weights of one input, w * p + w * q, were factored by LLVM into (p + q) * w
   (the adjoint sums' reassoc) and p + q reassociated with p's and q's own adds: s + bb of
   TwoSum, A - e, the Kahan step's y - c, the double-double's s - hi came out wrong by a unit
   of the last place or more at -O1..-O3 before session 35 (autodiff/rounded_partials). Every
   expected value is computed by the program itself, the same expression without w. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
typedef struct { double dw, dv; } grad2;
grad2 __enzyme_autodiff2(void *, ...);

static int failures;

/* Passes when got and want are the same double (exact: the weights are rounded values). */
static void same(const char *what, double at, double got, double want) {
    int ok = got == want;
    failures += !ok;
    printf("%-4s %-30s at %-10.4g got %-24a want %a\n", ok ? "ok" : "FAIL", what, at, got, want);
}

/* the roundings are the program's meaning: -ffast-math would reassociate the idioms away */
#pragma float_control(precise, on, push)

static double two_sum(double a, double b, double *e) {
    double s = a + b, bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}
static double fast_two_sum(double a, double b, double *e) { /* |a| >= |b| */
    double s = a + b;
    *e = b - (s - a);
    return s;
}
static double split(double a, double *lo) { /* Veltkamp: a = hi + lo, 26 bits each */
    double c = 134217729.0 * a, hi = c - (c - a);
    *lo = a - hi;
    return hi;
}
static double two_product(double a, double b, double *e) { /* Dekker */
    double p = a * b, al, bl, ah = split(a, &al), bh = split(b, &bl);
    *e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return p;
}
static double two_product_fma(double a, double b, double *e) {
    double p = a * b;
    *e = fma(a, b, -p);
    return p;
}
/* (a + a 2^-70) + (b - b 2^-71) in double-double: the high word, the low word in *lo */
static double dd_sum(double a, double b, double *lo) {
    double e, s = two_sum(a, b, &e);
    e += 0x1p-70 * a - 0x1p-71 * b;
    return fast_two_sum(s, e, lo);
}

/* f_w: w e + v s; f_x: e x; f_xs: e x + s x (d/dx = e + s) */
#define WEIGHTED(NAME, CALL)                                                                       \
    static double NAME##_w(double w, double v, double a, double b) {                              \
        double e, s = CALL;                                                                       \
        return w * e + v * s;                                                                     \
    }                                                                                             \
    static double NAME##_x(double x, double a, double b) {                                        \
        double e;                                                                                 \
        (void)CALL;                                                                               \
        return e * x;                                                                             \
    }                                                                                             \
    static double NAME##_xs(double x, double a, double b) {                                       \
        double e, s = CALL;                                                                       \
        return e * x + s * x;                                                                     \
    }                                                                                             \
    static double NAME##_e(double a, double b) {                                                  \
        double e;                                                                                 \
        (void)CALL;                                                                               \
        return e;                                                                                 \
    }                                                                                             \
    static double NAME##_s(double a, double b) {                                                  \
        double e;                                                                                 \
        return CALL;                                                                              \
    }
WEIGHTED(twosum, two_sum(a, b, &e))
WEIGHTED(fasttwosum, fast_two_sum(a, b, &e))
WEIGHTED(split, split(a + 0 * b, &e))
WEIGHTED(twoproduct, two_product(a, b, &e))
WEIGHTED(twoproductfma, two_product_fma(a, b, &e))
WEIGHTED(ddsum, dd_sum(a, b, &e))

/* two weights of one input: d/dw = p + q (or p - q), LLVM factors w p + w q into (p + q) w */
#define TWOSUM_PARTS double s = a + b, bb = s - a, t = s - bb, ea = a - t, eb = b - bb, e = ea + eb
static double twosum_s_bb(double w, double a, double b) { TWOSUM_PARTS; (void)e; return w * s + w * bb; }
static double twosum_s_bb_ref(double a, double b) { TWOSUM_PARTS; (void)e; return s + bb; }
static double twosum_ea_e(double w, double a, double b) { TWOSUM_PARTS; return w * ea - w * e; }
static double twosum_ea_e_ref(double a, double b) { TWOSUM_PARTS; return ea - e; }
#define KAHAN_STEP double c0 = 0x1p-60, y = b - c0, t = a + y, u = t - a, c = u - y
static double kahan_y_c(double w, double a, double b) { KAHAN_STEP; return w * y - w * c; }
static double kahan_y_c_ref(double a, double b) { KAHAN_STEP; return y - c; }
#define DD_PARTS double lo, hi = dd_sum(a, b, &lo), s = a + b
static double dd_s_hi(double w, double a, double b) { DD_PARTS; (void)lo; return w * s - w * hi; }
static double dd_s_hi_ref(double a, double b) { DD_PARTS; (void)lo; return s - hi; }

/* Kahan's sum of x: its compensation as a weight, and summed per step as a weight */
static double kahan(const double *x, int n, double *comp) {
    double s = 0, c = 0;
    for (int i = 0; i < n; i++) {
        double y = x[i] - c, t = s + y;
        c = (t - s) - y;
        s = t;
    }
    *comp = c;
    return s;
}
static double kahan_w(double w, double v, const double *x, int n) {
    double c, s = kahan(x, n, &c);
    return w * c + v * s;
}
static double kahan_steps(double w, const double *x, int n) {
    double s = 0, c = 0, r = 0;
    for (int i = 0; i < n; i++) {
        double y = x[i] - c, t = s + y;
        c = (t - s) - y;
        s = t;
        r += w * c;
    }
    return r;
}
static double kahan_steps_ref(const double *x, int n) {
    double s = 0, c = 0, r = 0;
    for (int i = 0; i < n; i++) {
        double y = x[i] - c, t = s + y;
        c = (t - s) - y;
        s = t;
        r += c;
    }
    return r;
}

#define CHECK_WEIGHTED(NAME, A, B)                                                                \
    do {                                                                                          \
        double a = (A), b = (B), e = NAME##_e(a, b), s = NAME##_s(a, b);                         \
        if (e == 0) same(#NAME " error term is not 0", a, e, 1);                                  \
        grad2 g = __enzyme_autodiff2((void *)NAME##_w, 2.0, 3.0, enzyme_const, a, enzyme_const, b); \
        same(#NAME " d/dw reverse", a, g.dw, e);                                                  \
        same(#NAME " d/dv reverse", a, g.dv, s);                                                  \
        same(#NAME " d/dw forward", a,                                                            \
             __enzyme_fwddiff((void *)NAME##_w, 2.0, 1.0, 3.0, 0.0, enzyme_const, a, enzyme_const, b), e); \
        same(#NAME " d/dv forward", a,                                                            \
             __enzyme_fwddiff((void *)NAME##_w, 2.0, 0.0, 3.0, 1.0, enzyme_const, a, enzyme_const, b), s); \
        same(#NAME " e x reverse", a,                                                             \
             __enzyme_autodiff((void *)NAME##_x, 5.0, enzyme_const, a, enzyme_const, b), e);     \
        same(#NAME " e x forward", a,                                                             \
             __enzyme_fwddiff((void *)NAME##_x, 5.0, 1.0, enzyme_const, a, enzyme_const, b), e); \
        same(#NAME " e x + s x reverse", a,                                                       \
             __enzyme_autodiff((void *)NAME##_xs, 5.0, enzyme_const, a, enzyme_const, b), e + s); \
        same(#NAME " e x + s x forward", a,                                                       \
             __enzyme_fwddiff((void *)NAME##_xs, 5.0, 1.0, enzyme_const, a, enzyme_const, b), e + s); \
    } while (0)

#define CHECK_PAIR(NAME, A, B)                                                                    \
    do {                                                                                          \
        double a = (A), b = (B), want = NAME##_ref(a, b);                                         \
        same(#NAME " reverse", a, __enzyme_autodiff((void *)NAME, 2.0, enzyme_const, a, enzyme_const, b), want); \
        same(#NAME " forward", a,                                                                 \
             __enzyme_fwddiff((void *)NAME, 2.0, 1.0, enzyme_const, a, enzyme_const, b), want);  \
    } while (0)

static void test(double p, double q) {
    CHECK_WEIGHTED(twosum, p, q);
    CHECK_WEIGHTED(fasttwosum, p, q);
    CHECK_WEIGHTED(split, q, p);
    CHECK_WEIGHTED(twoproduct, p + 0.1, q + 1.0 / 3); /* (a product that rounds) */
    CHECK_WEIGHTED(twoproductfma, p + 0.1, q + 1.0 / 3);
    CHECK_WEIGHTED(ddsum, p, q);
    CHECK_PAIR(twosum_s_bb, p, q);
    CHECK_PAIR(twosum_ea_e, p, q);
    CHECK_PAIR(kahan_y_c, p, q);
    CHECK_PAIR(dd_s_hi, p, q);
}

static void test_kahan(double first, int n) {
    double x[64];
    x[0] = first;
    for (int i = 1; i < n; i++) /* lost next to first: the compensation keeps them */
        x[i] = 0x1p-60 * ((i % 5) + 1) + 0x1p-50 * (i % 3 == 0);
    double c, s = kahan(x, n, &c);
    if (c == 0) same("kahan compensation is not 0", first, c, 1);
    grad2 g = __enzyme_autodiff2((void *)kahan_w, 2.0, 3.0, enzyme_const, x, n);
    same("kahan d/dw reverse", first, g.dw, c);
    same("kahan d/dv reverse", first, g.dv, s);
    same("kahan d/dw forward", first, __enzyme_fwddiff((void *)kahan_w, 2.0, 1.0, 3.0, 0.0, enzyme_const, x, n), c);
    same("kahan d/dv forward", first, __enzyme_fwddiff((void *)kahan_w, 2.0, 0.0, 3.0, 1.0, enzyme_const, x, n), s);
    double r = kahan_steps_ref(x, n);
    same("kahan steps reverse", first, __enzyme_autodiff((void *)kahan_steps, 2.0, enzyme_const, x, n), r);
    same("kahan steps forward", first, __enzyme_fwddiff((void *)kahan_steps, 2.0, 1.0, enzyme_const, x, n), r);
}

int main(int argc, char **argv) {
    (void)argv;
    volatile double one = 1.0, tiny = 1e-17, tenth = 0.1; /* (kept from being folded) */
    test(one, tiny);
    test(one / 3, tenth);
    test(-2.5, 3 * tenth);
    test(0.7, 1e-9 * one);
    int n = 20 + argc; /* not a compile-time constant */
    test_kahan(one, n);
    test_kahan(-3 * one, n + 17);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
#pragma float_control(pop)
