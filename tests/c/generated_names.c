/* User functions named like the derivatives zymase generates (diffe<f>, fwddiffe<f>,
   augmented<f>, for f and for a callee kept out of line): the generated code must not
   take the user's function, nor the user's call reach the generated one (issue 23 item 4,
   the C glue's names). Every name below is an ordinary C identifier. */
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

/* kept out of line, so reverse mode needs augmentedg/diffeg and forward mode fwddiffeg */
__attribute__((noinline)) double g(double x) { return sin(x) * x; }
double f(double x) { return g(x) * x + exp(x); }

/* the user's functions with the generated names: different values, so a mix-up shows */
__attribute__((noinline)) double diffef(double x) { return 100.0 + x; }
__attribute__((noinline)) double fwddiffef(double x) { return 200.0 + x; }
__attribute__((noinline)) double diffeg(double x) { return 300.0 + x; }
__attribute__((noinline)) double augmentedg(double x) { return 400.0 + x; }
__attribute__((noinline)) double fwddiffeg(double x) { return 500.0 + x; }

static double d_g(double x) { return cos(x) * x + sin(x); }
static double d_f(double x) { return d_g(x) * x + g(x) + exp(x); }

int main(int argc, char **argv) {
    (void)argv;
    double pts[] = {0.3, -1.2, 2.5};
    for (int i = 0; i < 3; i++) {
        double x = pts[i] * argc;
        check("reverse df/dx", x, __enzyme_autodiff((void *)f, x), d_f(x), TOL);
        check("forward df/dx", x, __enzyme_fwddiff((void *)f, x, 1.0), d_f(x), TOL);
        check("reverse dg/dx", x, __enzyme_autodiff((void *)g, x), d_g(x), TOL);
        check("user diffef", x, diffef(x), 100.0 + x, 0);
        check("user fwddiffef", x, fwddiffef(x), 200.0 + x, 0);
        check("user diffeg", x, diffeg(x), 300.0 + x, 0);
        check("user augmentedg", x, augmentedg(x), 400.0 + x, 0);
        check("user fwddiffeg", x, fwddiffeg(x), 500.0 + x, 0);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
