/* A function declared inactive in this file and defined in another one
   (parts/inactive_declared_definitions.c): its calls have a zero derivative here too,
   in reverse and forward mode. Guards issue 24 item 2 (inactive declarations). */
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

__attribute__((enzyme_inactive)) double flux_limiter(double x);

/* f = limiter(x) x + x^2: df = limiter(x) + 2x */
double limited(double x) { return flux_limiter(x) * x + x * x; }

int main(void) {
    double xs[] = {-1.0, 0.5, 1.5};
    for (int i = 0; i < 3; i++) {
        double x = xs[i], want = flux_limiter(x) + 2 * x;
        check("rev limited", x, __enzyme_autodiff((void *)limited, x), want);
        check("fwd limited", x, __enzyme_fwddiff((void *)limited, x, 1.0), want);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
