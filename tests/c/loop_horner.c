/* for loops over scalar state with run-time counts: Horner's rule with constant coefficients, products, a float loop. */
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

static const double coef[] = {0.5, -1.25, 2.0, 0.75, -3.0, 1.0, 0.125, -0.5, 4.0, 1.5};

/* s = s * x + c[i]: the polynomial sum_i c[i] x^(n-1-i) */
static double horner(double x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s = s * x + coef[i];
    return s;
}
/* closed form: differentiate term by term */
static double d_horner(double x, int n) {
    double d = 0.0;
    for (int i = 0; i < n; i++) {
        int e = n - 1 - i;
        if (e > 0)
            d += coef[i] * e * pow(x, e - 1);
    }
    return d;
}

/* prod_{i=1..n} (1 + x / i) */
static double product(double x, int n) {
    double p = 1.0;
    for (int i = 1; i <= n; i++)
        p *= 1.0 + x / i;
    return p;
}
static double d_product(double x, int n) {
    double sum = 0.0;
    for (int i = 1; i <= n; i++)
        sum += 1.0 / (i + x);
    return product(x, n) * sum;
}

/* a counting-down loop with a step of two and a loop-carried pair */
static double pairs(double x, int n) {
    double a = x, b = 1.0;
    for (int i = n; i > 0; i -= 2) {
        double t = a * b;
        b = a + b;
        a = t;
    }
    return a + b;
}

/* float state */
static int float_n;
static float fhorner(float x) {
    float s = 0.0f;
    for (int i = 0; i < float_n; i++)
        s = s * x + (float)coef[i];
    return s;
}

static double fd(double (*f)(double, int), double x, int n) {
    double h = 1e-5;
    return (f(x + h, n) - f(x - h, n)) / (2.0 * h);
}

int main(int argc, char **argv) {
    (void)argv;
    int nmax = argc + 9; /* 10, known only at run time */
    static const double xs[] = {-1.5, -0.3, 0.0, 0.7, 1.2, 2.0};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        for (int n = 0; n <= nmax; n += (n < 3 ? 1 : 3)) {
            check("horner reverse", x, __enzyme_autodiff((void *)horner, x, n), d_horner(x, n), TOL);
            check("horner forward", x, __enzyme_fwddiff((void *)horner, x, 1.0, n), d_horner(x, n), TOL);
            check("product reverse", x, __enzyme_autodiff((void *)product, x, n), d_product(x, n), TOL);
            check("product forward", x, __enzyme_fwddiff((void *)product, x, 1.0, n), d_product(x, n), TOL);
            check("pairs reverse vs fd", x, __enzyme_autodiff((void *)pairs, x, n), fd(pairs, x, n), 1e-6);
            check("pairs forward vs fd", x, __enzyme_fwddiff((void *)pairs, x, 1.0, n), fd(pairs, x, n), 1e-6);
        }
        float_n = nmax;
        float fx = (float)x;
        check("fhorner reverse", x, __enzyme_autodiff_f(fhorner, fx), d_horner(fx, nmax), FTOL);
        check("fhorner forward", x, __enzyme_fwddiff_f(fhorner, fx, 1.0f), d_horner(fx, nmax), FTOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
