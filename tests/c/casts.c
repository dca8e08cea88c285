/* Casts: int->double, double->int truncation (zero derivative), double->float->double, float<->double in float code. */
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

/* int -> double: the int is a constant scale */
static double scaled(double x, int n) { return x * (double)n + (double)(n * n); }
/* double -> int truncation has derivative zero: d/dx (k x + k) = k */
static double stepmul(double x) { int k = (int)x; return k * x + k; }
/* long and unsigned conversions */
static double lmix(double x) { long k = lround(3.0 * x); unsigned u = (unsigned)(x * x); return x * x + k + u; }
/* through float: d/dx (float)x squared, computed in float */
static double through_float(double x) { float y = (float)x; return (double)(y * y); }
/* a double computation inside a float function */
static float widened(float x) { double d = x; return (float)(sin(d) * d); }
/* a float computation inside a float function, converted to int and back */
static float quantized(float x) { return x * x + (float)(int)(x * 10.0f) / 10.0f; }

int main(int argc, char **argv) {
    (void)argv;
    static const double xs[] = {-2.6, -0.35, 0.45, 1.7, 5.2};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        int n = argc + 2 + (int)i; /* known only at run time */
        check("scaled reverse", x, __enzyme_autodiff((void *)scaled, x, n), (double)n, TOL);
        check("scaled forward", x, __enzyme_fwddiff((void *)scaled, x, 1.0, n), (double)n, TOL);
        int k = (int)x;
        check("stepmul reverse", x, __enzyme_autodiff((void *)stepmul, x), (double)k, TOL);
        check("stepmul forward", x, __enzyme_fwddiff((void *)stepmul, x, 1.0), (double)k, TOL);
        check("lmix reverse", x, __enzyme_autodiff((void *)lmix, x), 2.0 * x, TOL);
        check("lmix forward", x, __enzyme_fwddiff((void *)lmix, x, 1.0), 2.0 * x, TOL);
        /* the derivative 2 y is exact in float; y = (float)x */
        double y = (float)x;
        check("through_float reverse", x, __enzyme_autodiff((void *)through_float, x), 2.0 * y, TOL);
        check("through_float forward", x, __enzyme_fwddiff((void *)through_float, x, 1.0), 2.0 * y, TOL);

        float fx = (float)x;
        double d = fx;
        check("widened reverse", d, __enzyme_autodiff_f(widened, fx), cos(d) * d + sin(d), FTOL);
        check("widened forward", d, __enzyme_fwddiff_f(widened, fx, 1.0f), cos(d) * d + sin(d), FTOL);
        check("quantized reverse", d, __enzyme_autodiff_f(quantized, fx), 2.0 * d, FTOL);
        check("quantized forward", d, __enzyme_fwddiff_f(quantized, fx, 1.0f), 2.0 * d, FTOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
