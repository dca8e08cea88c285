/* Functions marked __attribute__((enzyme_function_like("log"))) and the like: each call
   is differentiated with the derivative of the named libm function at the call's
   argument (the body, which computes something else here, gives only the value), in
   reverse and forward mode, in a loop and from a function zymase inlines.
   Guards issue 24 item 2 (function_like, attribute spelling). */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(float (*)(float), float);
extern int enzyme_dup;

static int failures;

static void check(const char *what, double at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
    failures += !ok;
}

/* a log of its own (its body's derivative would be 2) */
__attribute__((enzyme_function_like("log"))) double my_log(double x) { return 2 * x; }

/* a sine by its series: differentiated as sin, d = cos(x) exactly */
__attribute__((enzyme_function_like("sin"))) double my_sin(double x) {
    double term = x, s = x;
    for (int k = 1; k < 12; k++) {
        term *= -x * x / ((2 * k) * (2 * k + 1));
        s += term;
    }
    return s;
}

__attribute__((enzyme_function_like("log"))) float my_logf(float x) { return x * x; }

/* f = x^2 * my_log(x): df = 2 x my_log(x) + x^2 / x */
double product(double x) { return x * x * my_log(x); }

/* f = my_log(x^2 + 1): df = 2x / (x^2 + 1) */
double chain(double x) { return my_log(x * x + 1); }

/* f = sum_k my_sin(k x): df = sum_k k cos(k x) */
double harmonics(double x) {
    double s = 0;
    for (int k = 1; k <= 3; k++) s += my_sin(k * x);
    return s;
}

static void add_log(double *y, double x) { *y += my_log(x) * x; }

/* y = my_log(x) x (through an inlined callee): dy = my_log(x) + 1 */
void log_times(double x, double *y) {
    *y = 0;
    add_log(y, x);
}

float float_chain(float x) { return my_logf(3 * x); }

int main(void) {
    double xs[] = {0.5, 1.5, 3.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i];
        double want = 2 * x * my_log(x) + x;
        check("rev product", x, __enzyme_autodiff((void *)product, x), want, 1e-9);
        check("fwd product", x, __enzyme_fwddiff((void *)product, x, 1.0), want, 1e-9);
        check("rev chain", x, __enzyme_autodiff((void *)chain, x), 2 * x / (x * x + 1), 1e-9);
        check("fwd chain", x, __enzyme_fwddiff((void *)chain, x, 1.0), 2 * x / (x * x + 1), 1e-9);
        double h = cos(x) + 2 * cos(2 * x) + 3 * cos(3 * x);
        check("rev harmonics", x, __enzyme_autodiff((void *)harmonics, x), h, 1e-9);
        check("fwd harmonics", x, __enzyme_fwddiff((void *)harmonics, x, 1.0), h, 1e-9);
        double y = 0, dy = 1.0;
        double dx = __enzyme_autodiff((void *)log_times, x, enzyme_dup, &y, &dy);
        check("rev log_times", x, dx, my_log(x) + 1, 1e-9);
        double ty = 0;
        __enzyme_fwddiff((void *)log_times, x, 1.0, enzyme_dup, &y, &ty);
        check("fwd log_times", x, ty, my_log(x) + 1, 1e-9);
        check("rev float chain", x, __enzyme_autodiff_f(float_chain, (float)x), 1 / x, 1e-4);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
