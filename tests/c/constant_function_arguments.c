/* A function passed as an enzyme_const argument and called through its pointer inside the
   differentiated function: the call is made direct in a copy of the function specialized
   for that argument (issue 24 item 4; the C++ header relies on it). The same function
   differentiated with different constant functions (one of them libm's sin), called
   twice and nested, in reverse and forward mode. */
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
    printf("%-4s %-40s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

static double cube(double x) { return x * x * x; }
static double wave(double x) { return sin(2.0 * x); }

/* g(g(x)) * k: two calls through the pointer */
double compose(double (*g)(double), double x, double k) { return g(g(x)) * k; }

/* a midpoint rule for the integral of g over [0, b]: calls in a loop */
double integral(double (*g)(double), double b, int n) {
    double h = b / n, s = 0.0;
    for (int i = 0; i < n; i++) s += g((i + 0.5) * h);
    return s * h;
}

int main(void) {
    for (double x = -1.1; x <= 1.2; x += 0.55) {
        double c = cube(x);
        check("d compose(cube)/dx", x,
              __enzyme_autodiff((void *)compose, enzyme_const, cube, x, enzyme_const, 2.0),
              2.0 * 3.0 * c * c * 3.0 * x * x, 1e-9);
        check("d compose(wave)/dx", x,
              __enzyme_autodiff((void *)compose, enzyme_const, wave, x, enzyme_const, 2.0),
              2.0 * 2.0 * cos(2.0 * sin(2.0 * x)) * 2.0 * cos(2.0 * x), 1e-9);
        check("compose(cube) forward", x,
              __enzyme_fwddiff((void *)compose, enzyme_const, cube, x, 1.0, enzyme_const, 2.0),
              2.0 * 3.0 * c * c * 3.0 * x * x, 1e-9);
    }
    for (double b = 0.5; b <= 2.0; b += 0.5) {
        int n = 16;
        double h = 1e-6;
        double fd = (integral(wave, b + h, n) - integral(wave, b - h, n)) / (2.0 * h);
        double want = 0.0;  /* d/db of h * sum sin(2 (i + 1/2) b / n), h = b / n */
        for (int i = 0; i < n; i++) {
            double t = (i + 0.5) / n;
            want += sin(2.0 * t * b) / n + b / n * 2.0 * t * cos(2.0 * t * b);
        }
        double got = __enzyme_autodiff((void *)integral, enzyme_const, wave, b, enzyme_const, n);
        check("d integral(wave)/db", b, got, want, 1e-9);
        check("d integral(wave)/db, central difference", b, got, fd, 1e-6);
        /* a libm function: the direct call gets sin's derivative rule */
        double want_sin = 0.0;
        for (int i = 0; i < n; i++) {
            double t = (i + 0.5) / n;
            want_sin += sin(t * b) / n + b / n * t * cos(t * b);
        }
        check("d integral(sin)/db", b, __enzyme_autodiff((void *)integral, enzyme_const, sin, b, enzyme_const, n),
              want_sin, 1e-9);
        check("integral(cube) forward", b,
              __enzyme_fwddiff((void *)integral, enzyme_const, cube, b, 1.0, enzyme_const, n),
              (integral(cube, b + h, n) - integral(cube, b - h, n)) / (2.0 * h), 1e-6);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
