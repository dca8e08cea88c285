/* long double (x86_fp80): arithmetic, the libm long double functions (sinl, expl, powl, ...), a loop
   whose long double values are taped, and a long double array; forward and reverse. */
#include <stdio.h>
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;
static int fails;
static void check(const char *w, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1, fabs(want));
    fails += !ok; printf("%-4s %-24s got %.15g want %.15g\n", ok ? "ok" : "FAIL", w, got, want);
}
double mathl(double x) {
    long double y = x;
    return (double)(sinl(y) * expl(y / 3) + sqrtl(y + 1) + powl(y, 2.5L) + logl(y));
}
double loop(double x, int n) {
    long double s = 0, y = x;
    for (int i = 0; i < n; i++) s = s * 0.5L + sinl(y * i);
    return (double)s;
}
double arr(const long double *v, int n) {
    long double s = 0;
    for (int i = 0; i < n; i++) s += v[i] * v[i] * (i + 1);
    return (double)s;
}
static double fd(double (*f)(double), double x) { double h = 1e-5; return (f(x + h) - f(x - h)) / (2 * h); }
static double loop7(double x) { return loop(x, 7); }
int main(void) {
    volatile double x0 = 0.8;
    double x = x0; /* not a constant: an x86_fp80 constant folded from it need not be a double */
    check("mathl reverse", __enzyme_autodiff((void *)mathl, x), fd(mathl, x), 1e-8);
    check("mathl forward", __enzyme_fwddiff((void *)mathl, x, 1.0), fd(mathl, x), 1e-8);
    check("loop reverse", __enzyme_autodiff((void *)loop, x, enzyme_const, 7), fd(loop7, x), 1e-8);
    check("loop forward", __enzyme_fwddiff((void *)loop, x, 1.0, enzyme_const, 7), fd(loop7, x), 1e-8);
    long double v[3] = {1, 2, 3}, dv[3] = {0};
    __enzyme_autodiff((void *)arr, enzyme_dup, v, dv, enzyme_const, 3);
    check("array d/dv[2]", (double)dv[2], 2 * 3 * 3, 1e-12);
    check("array d/dv[0]", (double)dv[0], 2, 1e-12);
    printf("%d failure(s)\n", fails);
    return fails != 0;
}
