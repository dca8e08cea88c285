/* Compensated arithmetic as numerical codes write it: Kahan and Neumaier summation (with the
   running sum in a `volatile` local, as code written against excess precision or -ffast-math
   keeps it, and without), TwoSum, TwoProduct with fma, Dekker's split (134217729 = 2^27 + 1)
   and rounding to float through a `volatile float`. Differentiated as written, every
   compensation term has derivative 0 in exact arithmetic (it is an error term of the
   rounding), so the derivatives are those of the plain sums and products. A volatile local was
   refused as "a volatile memory access on active data" until session 34: it is a stack slot
   like any other. Reverse and forward mode, against closed forms. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);

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

/* sum_i sin(x i) / i: d/dx = sum_i cos(x i) */
static double kahan(double x, int n) {
    double s = 0, c = 0;
    for (int i = 1; i <= n; i++) {
        double y = sin(x * i) / i - c;
        double t = s + y;
        c = (t - s) - y;
        s = t;
    }
    return s;
}
static double kahan_volatile(double x, int n) {
    double s = 0, c = 0;
    for (int i = 1; i <= n; i++) {
        double y = sin(x * i) / i - c;
        volatile double t = s + y;
        volatile double z = t - s;
        c = z - y;
        s = t;
    }
    return s;
}
/* sum_i (+-1e8 + x i): d/dx = n (n + 1) / 2 */
static double neumaier(double x, int n) {
    double s = 0, c = 0;
    for (int i = 1; i <= n; i++) {
        double v = (i & 1 ? 1e8 : -1e8) + x * i;
        double t = s + v;
        if (fabs(s) >= fabs(v))
            c += (s - t) + v;
        else
            c += (v - t) + s;
        s = t;
    }
    return s + c;
}
/* (a + b)^2 plus the rounding error of a + b */
static double two_sum(double a, double b) {
    double s = a + b, bb = s - a, e = (a - (s - bb)) + (b - bb);
    return s * s + 1e3 * e;
}
/* a b plus its rounding error */
static double two_product(double a, double b) {
    double p = a * b, e = fma(a, b, -p);
    return p + 1e5 * e;
}
static void split(double a, double *hi, double *lo) {
    double c = 134217729.0 * a;
    *hi = c - (c - a);
    *lo = a - *hi;
}
/* a b plus its rounding error by Dekker's product */
static double dekker_product(double a, double b) {
    double p = a * b, ah, al, bh, bl;
    split(a, &ah, &al);
    split(b, &bh, &bl);
    double e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return p + 1e3 * e;
}
/* x rounded to float (its derivative taken as 1) and squared */
static double through_float(double x) {
    volatile float t = (float)x;
    return (double)t * (double)t;
}

static void test(double x, double y, int n) {
    double want = 0;
    for (int i = 1; i <= n; i++)
        want += cos(x * i);
    check("kahan reverse", x, __enzyme_autodiff((void *)kahan, x, n), want, TOL);
    check("kahan forward", x, __enzyme_fwddiff((void *)kahan, x, 2.0, n), 2.0 * want, TOL);
    check("kahan volatile reverse", x, __enzyme_autodiff((void *)kahan_volatile, x, n), want, TOL);
    check("kahan volatile forward", x, __enzyme_fwddiff((void *)kahan_volatile, x, 2.0, n), 2.0 * want, TOL);
    want = n * (n + 1) / 2.0;
    check("neumaier reverse", x, __enzyme_autodiff((void *)neumaier, x, n), want, TOL);
    check("neumaier forward", x, __enzyme_fwddiff((void *)neumaier, x, 2.0, n), 2.0 * want, TOL);

    grad2 g = __enzyme_autodiff2((void *)two_sum, x, y);
    double s = x + y;
    check("two_sum d/da", x, g.dx, 2.0 * s, TOL);
    check("two_sum d/db", y, g.dy, 2.0 * s, TOL);
    check("two_sum forward", x, __enzyme_fwddiff((void *)two_sum, x, 1.0, y, 2.0), 6.0 * s, TOL);
    g = __enzyme_autodiff2((void *)two_product, x, y);
    check("two_product d/da", x, g.dx, y, TOL);
    check("two_product d/db", y, g.dy, x, TOL);
    check("two_product forward", x, __enzyme_fwddiff((void *)two_product, x, 1.0, y, 2.0), y + 2.0 * x, TOL);
    g = __enzyme_autodiff2((void *)dekker_product, x, y);
    check("dekker_product d/da", x, g.dx, y, TOL);
    check("dekker_product d/db", y, g.dy, x, TOL);
    check("dekker_product forward", x, __enzyme_fwddiff((void *)dekker_product, x, 1.0, y, 2.0),
          y + 2.0 * x, TOL);

    double r = (double)(float)x;
    check("through_float reverse", x, __enzyme_autodiff((void *)through_float, x), 2.0 * r, 1e-6);
    check("through_float forward", x, __enzyme_fwddiff((void *)through_float, x, 2.0), 4.0 * r, 1e-6);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = 20 + argc; /* not a compile-time constant */
    test(0.7, 0.4000000000000001, n);
    test(-1.3, 2.9, n + 3);
    test(3.1234567891, -0.7123456789, n - 5);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
