/* Functions registered inactive with Enzyme's globals __enzyme_inactivefn[] (any suffix):
   the derivative through their calls is exactly zero, the rest of the derivative is
   right, in reverse and forward mode, in a loop and from a function zymase inlines.
   Guards issue 24 item 2 (inactive functions, global spelling). */
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

double damping(double x) { return exp(-x * x); }
double offset(double x) { return 3.0 * x - 1.0; }
static double counter;  /* written by log_value: an inactive function may write memory */
void log_value(double x) { counter += x; }

void *__enzyme_inactivefn[] = {(void *)damping, (void *)log_value};
void *__enzyme_inactivefn_more[1] = {(void *)offset};

/* f = x^3 * damping(x) + offset(x): df = 3 x^2 damping(x) */
double model(double x) {
    log_value(x);
    return x * x * x * damping(x) + offset(x);
}

/* sum_k damping(x) * sin(k x): df = damping(x) * sum_k k cos(k x) */
double spectrum(double x) {
    double s = 0;
    for (int k = 1; k <= 4; k++) s += damping(x) * sin(k * x);
    return s;
}

static void add_damped(double *y, double x) { *y += damping(x) * x * x; }

/* y = damping(x) x^2 (through an inlined callee): dy = 2 x damping(x) */
void damped_square(double x, double *y) {
    *y = 0;
    add_damped(y, x);
}

int main(void) {
    double xs[] = {-0.75, 0.5, 1.25};
    for (int i = 0; i < 3; i++) {
        double x = xs[i], want = 3 * x * x * damping(x);
        check("rev model", x, __enzyme_autodiff((void *)model, x), want);
        check("fwd model", x, __enzyme_fwddiff((void *)model, x, 1.0), want);
        double sum = 0;
        for (int k = 1; k <= 4; k++) sum += k * cos(k * x);
        check("rev spectrum", x, __enzyme_autodiff((void *)spectrum, x), damping(x) * sum);
        check("fwd spectrum", x, __enzyme_fwddiff((void *)spectrum, x, 1.0), damping(x) * sum);
        double y = 0, dy = 1.0;
        double dx = __enzyme_autodiff((void *)damped_square, x, enzyme_dup, &y, &dy);
        check("rev damped_square", x, dx, 2 * x * damping(x));
        double ty = 0;
        __enzyme_fwddiff((void *)damped_square, x, 1.0, enzyme_dup, &y, &ty);
        check("fwd damped_square", x, ty, 2 * x * damping(x));
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
