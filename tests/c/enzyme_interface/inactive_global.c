/* Globals marked inactive, through __attribute__((enzyme_inactive)) and through
   Enzyme's global __enzyme_inactive_global = (void *)&g: what is loaded from them is a
   constant and active data stored into them drops its derivative, in reverse and
   forward mode and in a loop. Guards issue 24 item 2 (inactive globals). */
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

__attribute__((enzyme_inactive)) double cached_square;
double running_total;
void *__enzyme_inactive_global = (void *)&running_total;

/* cached_square = x^2, a constant: f = cached_square x + x, df = x^2 + 1 */
double through_cache(double x) {
    cached_square = x * x;
    return cached_square * x + x;
}

/* running_total += x, read back as a constant each time: f = sum_k t_k x, with
   t_k = t_0 + k x the values it holds: df = sum_k t_k */
double accumulate(double x) {
    double r = 0;
    for (int k = 1; k <= 3; k++) {
        running_total += x;
        r += running_total * x;
    }
    return r;
}

int main(void) {
    double xs[] = {-1.0, 0.5, 2.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i];
        check("rev through_cache", x, __enzyme_autodiff((void *)through_cache, x), x * x + 1);
        check("fwd through_cache", x, __enzyme_fwddiff((void *)through_cache, x, 1.0), x * x + 1);
        double t0 = 1.5, want = 0;
        for (int k = 1; k <= 3; k++) want += t0 + k * x;
        running_total = t0;
        check("rev accumulate", x, __enzyme_autodiff((void *)accumulate, x), want);
        check("rev accumulate leaves the primal total", x, running_total, t0 + 3 * x);
        running_total = t0;
        check("fwd accumulate", x, __enzyme_fwddiff((void *)accumulate, x, 1.0), want);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
