/* Selects and ternaries: abs, clamp, max of three, a C1 join, a select between two active values. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

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

static double my_abs(double x) { return x < 0 ? -x : x; }
static double clamp01(double x) { return x < 0 ? 0.0 : x > 1 ? 1.0 : x; }
static double max3(double x) {
    double a = x * x, b = 2.0 * x - 1.0, c = 0.5;
    double m = a > b ? a : b;
    return m > c ? m : c;
}
/* log(x) for x > 1, x - 1 below: continuous with a continuous derivative */
static double join(double x) { return x > 1.0 ? log(x) : x - 1.0; }
/* the select picks between two values that both depend on x */
static double pick(double x) {
    double s = sin(x), c = cos(x);
    return s > c ? s * x : c * x * x;
}

static double d_abs(double x) { return x < 0 ? -1.0 : 1.0; }
static double d_clamp01(double x) { return x < 0 || x > 1 ? 0.0 : 1.0; }
static double d_max3(double x) {
    double a = x * x, b = 2.0 * x - 1.0, c = 0.5;
    if (a > b)
        return a > c ? 2.0 * x : 0.0;
    return b > c ? 2.0 : 0.0;
}
static double d_join(double x) { return x > 1.0 ? 1.0 / x : 1.0; }
static double d_pick(double x) {
    double s = sin(x), c = cos(x);
    return s > c ? cos(x) * x + s : -sin(x) * x * x + 2.0 * c * x;
}

#define TEST(fn, x)                                                                    \
    do {                                                                               \
        check(#fn " reverse", x, __enzyme_autodiff((void *)fn, x), d_##fn(x), TOL);    \
        check(#fn " forward", x, __enzyme_fwddiff((void *)fn, x, 1.0), d_##fn(x), TOL); \
    } while (0)

#define d_my_abs d_abs

int main(void) {
    static const double xs[] = {-1.3, -0.2, 0.3, 0.6, 0.9, 1.6, 2.8};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        TEST(my_abs, x);
        TEST(clamp01, x);
        TEST(max3, x);
        TEST(join, x);
        TEST(pick, x);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
