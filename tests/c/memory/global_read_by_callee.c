// A global written with active data by one callee and read by another that takes no
// pointer (issue 24 follow-up, found with Enzyme's integration programs): the reader's
// result carries derivatives no operand of its call shows. Its call used to be treated as
// constant, a zero derivative at every level; callees that read globals are inlined now.
#include <math.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup;

static double buf[3];
static double scale = 2.0;  // a global that holds no derivative, read by the same callee

__attribute__((noinline)) static void fill(const double *x) {
    for (int i = 0; i < 3; i++) buf[i] = x[i] * x[i] * x[i];
}

__attribute__((noinline)) static double total(void) {
    double s = 0;
    for (int i = 0; i < 3; i++) s += scale * buf[i];
    return s;
}

static double model(const double *x) {
    fill(x);
    return total();
}

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-12 * (1 + fabs(want))) {
        printf("FAIL %s: got %.17g want %.17g\n", what, got, want);
        failures++;
    }
}

int main(void) {
    double x[3] = {1.0, 2.0, 0.5}, dx[3] = {0, 0, 0}, t[3] = {1.0, -1.0, 4.0};
    __enzyme_autodiff((void *)model, enzyme_dup, x, dx);
    for (int i = 0; i < 3; i++) check("reverse", dx[i], 2.0 * 3 * x[i] * x[i]);
    double tangent = __enzyme_fwddiff((void *)model, enzyme_dup, x, t);
    double want = 0;
    for (int i = 0; i < 3; i++) want += 2.0 * 3 * x[i] * x[i] * t[i];
    check("forward", tangent, want);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
