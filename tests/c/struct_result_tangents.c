// Forward mode of functions returning a struct of doubles in registers (session 32):
// `struct { double u, v; }`, `double _Complex` (two doubles), and two tangents at
// enzyme_width 2. The result was taken as constant: the tangents came back as zeros,
// silently. (Reverse mode of such a function is refused: an aggregate result has no
// seed in Enzyme's C interface; tests/python/test_cli_errors.py.)
#include <complex.h>
#include <math.h>
#include <stdio.h>

typedef struct { double u, v; } pair;
typedef struct { double _Complex t[2]; } two_complex;
extern pair __enzyme_fwddiff_pair(void *, ...);
extern double _Complex __enzyme_fwddiff_complex(void *, ...);
extern two_complex __enzyme_fwddiff_width2(void *, ...);
extern int enzyme_width;

static int failures;

static void check(const char *what, double at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok)
        failures++;
    printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

static pair polar(double r, double t) {
    pair p = {r * cos(t), r * sin(t)};
    return p;
}

static double _Complex cube(double re, double im) {
    double _Complex z = re + im * I;
    return z * z * z;
}

static double _Complex mixed(double x, double y) { return x * y + I * sin(x) * y * y; }

int main(void) {
    for (double t = -1.0; t <= 1.0; t += 0.5) {
        double r = 1.5 + t;
        pair d = __enzyme_fwddiff_pair((void *)polar, r, 0.5, t, 2.0);
        check("polar u", t, d.u, 0.5 * cos(t) - 2.0 * r * sin(t), 1e-12);
        check("polar v", t, d.v, 0.5 * sin(t) + 2.0 * r * cos(t), 1e-12);
        // d(z^3) = 3 z^2 dz with dz = 1 + 0.5i
        double re = t, im = 0.7 - 0.3 * t;
        double _Complex z = re + im * I, want = 3 * z * z * (1.0 + 0.5 * I);
        double _Complex got = __enzyme_fwddiff_complex((void *)cube, re, 1.0, im, 0.5);
        check("cube re", t, creal(got), creal(want), 1e-12);
        check("cube im", t, cimag(got), cimag(want), 1e-12);
        double x = 0.6 + t, y = -0.8;
        two_complex w = __enzyme_fwddiff_width2((void *)mixed, enzyme_width, 2, x, 1.0, 0.0, y, 0.0, 1.0);
        check("width 2, d/dx re", t, creal(w.t[0]), y, 1e-12);
        check("width 2, d/dx im", t, cimag(w.t[0]), cos(x) * y * y, 1e-12);
        check("width 2, d/dy re", t, creal(w.t[1]), x, 1e-12);
        check("width 2, d/dy im", t, cimag(w.t[1]), 2 * sin(x) * y, 1e-12);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
