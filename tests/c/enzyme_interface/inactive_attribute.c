/* Functions marked __attribute__((enzyme_inactive)) / enzyme_inactive_noblock: the
   derivative through their calls is exactly zero, the rest of the derivative is right,
   in reverse and forward mode, in loops, called from a function zymase inlines and
   given memory that holds derivatives (which they only read).
   Guards issue 24 item 2 (inactive functions, attribute spelling). */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures;

static void check(const char *what, double at, double got, double want) {
    int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
    printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
    failures += !ok;
}

/* a step size that depends on x, but is not to be differentiated */
__attribute__((enzyme_inactive)) double step_size(double x) { return 0.5 * x * x + 1.0; }

__attribute__((enzyme_inactive_noblock)) double scale_of(double x) { return sin(x) + 2.0; }

/* reads the array (its shadow is not touched) */
__attribute__((enzyme_inactive)) double norm2(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i] * v[i];
    return s;
}

/* f(x) = x * h(x) with h inactive: df = h(x) */
double times_step(double x) { return x * step_size(x); }

/* f(x) = scale(x) * x^2: df = 2 x scale(x) */
double scaled_square(double x) { return scale_of(x) * x * x; }

/* in a loop: sum_k x^k * h(x) = x h + x^2 h + x^3 h: df = h (1 + 2x + 3x^2) */
double series(double x) {
    double s = 0, p = 1;
    for (int k = 1; k <= 3; k++) {
        p *= x;
        s += p * step_size(x);
    }
    return s;
}

/* takes a pointer: zymase inlines it into weighted_sum */
static void accumulate(double *acc, const double *v, int n) {
    double w = norm2(v, n);
    for (int i = 0; i < n; i++) *acc += w * v[i];
}

/* sum_i w v_i with w = |v|^2 inactive: d/dv_j = w */
void weighted_sum(const double *v, double *out, int n) {
    *out = 0;
    accumulate(out, v, n);
}

int main(void) {
    double xs[] = {-1.5, 0.25, 2.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i];
        check("rev x*step(x)", x, __enzyme_autodiff((void *)times_step, x), step_size(x));
        check("fwd x*step(x)", x, __enzyme_fwddiff((void *)times_step, x, 1.0), step_size(x));
        check("rev scale(x)*x^2", x, __enzyme_autodiff((void *)scaled_square, x), 2 * x * scale_of(x));
        check("fwd scale(x)*x^2", x, __enzyme_fwddiff((void *)scaled_square, x, 1.0), 2 * x * scale_of(x));
        double want = step_size(x) * (1 + 2 * x + 3 * x * x);
        check("rev series", x, __enzyme_autodiff((void *)series, x), want);
        check("fwd series", x, __enzyme_fwddiff((void *)series, x, 1.0), want);
    }
    double v[3] = {1.0, -2.0, 0.5}, dv[3] = {0, 0, 0}, out = 0, dout = 1.0;
    double w = norm2(v, 3);
    __enzyme_autodiff((void *)weighted_sum, enzyme_dup, v, dv, enzyme_dup, &out, &dout, enzyme_const, 3);
    for (int j = 0; j < 3; j++) check("rev weighted_sum d/dv_j", j, dv[j], w);
    double tv[3] = {0, 1.0, 0}, tout = 0;
    __enzyme_fwddiff((void *)weighted_sum, enzyme_dup, v, tv, enzyme_dup, &out, &tout, enzyme_const, 3);
    check("fwd weighted_sum along e_1", 1, tout, w);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
