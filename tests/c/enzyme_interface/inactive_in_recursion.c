/* Inactive and function_like calls inside a recursive function, which zymase does not
   inline but differentiates in split mode (augmented forward and reverse functions):
   the marks hold there too, in reverse and forward mode.
   Guards issue 24 item 2 (marks in callees that are not inlined). */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures;

static void check(const char *what, double at, double got, double want) {
    int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
    printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
    failures += !ok;
}

__attribute__((enzyme_inactive)) double weight(double a) { return 2 * a; }
__attribute__((enzyme_function_like("log"))) double my_log(double a) { return 2 * a; }

/* adds weight(x) x + my_log(x) to *acc n times, returns x */
double repeat(double x, int n, double *acc) {
    if (n == 0) return x;
    *acc += weight(x) * x + my_log(x);
    return repeat(x, n - 1, acc);
}

/* f = 3 (weight(x) x + my_log(x)) + x: df = 3 (weight(x) + 1/x) + 1 */
double total(double x) {
    double acc = 0;
    double y = repeat(x, 3, &acc);
    return acc + y;
}

int main(void) {
    double xs[] = {0.5, 1.5, 4.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i], want = 3 * (weight(x) + 1 / x) + 1;
        check("rev total", x, __enzyme_autodiff((void *)total, x), want);
        check("fwd total", x, __enzyme_fwddiff((void *)total, x, 1.0), want);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
