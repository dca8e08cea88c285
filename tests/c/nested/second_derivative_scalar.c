// Nested differentiation of a scalar function, issue 25 item 1: forward over reverse
// and reverse over reverse give f'' (closed form), and a chain four deep
// (reverse, forward, reverse, forward) of a Taylor-series sine gives sin'''' = sin.
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want, double tol) {
    if (fabs(got - want) > tol * (1 + fabs(want))) {
        printf("FAIL %s: got %.17g want %.17g\n", what, got, want);
        failures++;
    }
}

double f(double x) { return sin(x) * x * x; }
double df(double x) { return __enzyme_autodiff((void *)f, x); }
double ddf_forward(double x) { return __enzyme_fwddiff((void *)df, x, 1.0); }
double ddf_reverse(double x) { return __enzyme_autodiff((void *)df, x); }

double taylor_sin(double x) {
    double term = x, s = x;
    for (int k = 1; k < 14; k++) {
        term *= -x * x / ((2 * k) * (2 * k + 1));
        s += term;
    }
    return s;
}
double d1(double x) { return __enzyme_autodiff((void *)taylor_sin, x); }
double d2(double x) { return __enzyme_fwddiff((void *)d1, x, 1.0); }
double d3(double x) { return __enzyme_autodiff((void *)d2, x); }
double d4(double x) { return __enzyme_fwddiff((void *)d3, x, 1.0); }

int main(void) {
    for (double x = -1.5; x < 2; x += 0.7) {
        double want = -sin(x) * x * x + 4 * x * cos(x) + 2 * sin(x);
        check("forward over reverse", ddf_forward(x), want, 1e-13);
        check("reverse over reverse", ddf_reverse(x), want, 1e-13);
        check("d1", d1(x), cos(x), 1e-12);
        check("d2", d2(x), -sin(x), 1e-12);
        check("d3", d3(x), -cos(x), 1e-11);
        check("d4", d4(x), sin(x), 1e-10);
    }
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
