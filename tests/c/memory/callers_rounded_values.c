/* Rounded sums the differentiated function does not compute itself: d/dw of w d + w y is
   d + y, 0 for d = x - y with x = 1, y = 2^60 (x - y rounds to -y). Here d comes from the
   caller (a parameter, or memory the caller wrote), from memory the function wrote through a
   pointer (kept there under --no-preopt, which differentiates before any forwarding), or from
   a callee. Once the derivative is inlined into the caller, LLVM forwards x - y into the
   partial, and the adjoint sum (reassoc: reductions vectorize) met it and y bare:
   (x - y) + y became x, silently dw = 1 at -O1..-O3 (the parameter, the caller's memory) and
   at -O2 --no-preopt (the function's own memory) before session 36. Such partials are now
   read behind a barrier too (autodiff/rounded_partials). */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-36s got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, got, want, tol);
}

#define TOL 1e-8
/* the rounding is the program's meaning: -ffast-math would reassociate the program itself */
#pragma float_control(precise, on, push)

static double from_parameter(double w, double d, double y) { return w * d + w * y; }
static double from_caller_memory(double w, const double *t, double y) { return w * t[0] + w * y; }
static double through_array(double w, double *t, double x, double y) {
    t[0] = x - y;
    return w * t[0] + w * y;
}
static double through_heap(double w, double x, double y) {
    double *t = malloc(sizeof(double));
    t[0] = x - y;
    double r = w * t[0] + w * y;
    free(t);
    return r;
}
static double global_scratch;
static double through_global(double w, double x, double y) {
    global_scratch = x - y;
    return w * global_scratch + w * y;
}
static double difference(double x, double y) { return x - y; }
static double from_callee(double w, double x, double y) { return w * difference(x, y) + w * y; }

#pragma float_control(pop)
#pragma float_control(precise, on, push)

int main(void) {
    volatile double vx = 1.0, vy = 0x1p60; /* (kept from being folded into the checks) */
    double x = vx, y = vy, t[1], dt[1] = {0};
    double want = (x - y) + y;

    check("parameter", __enzyme_autodiff((void *)from_parameter, 2.0, enzyme_const, x - y, enzyme_const, y), want,
          TOL);
    t[0] = x - y;
    check("caller's memory",
          __enzyme_autodiff((void *)from_caller_memory, 2.0, enzyme_const, t, enzyme_const, y), want, TOL);
    check("function's array", __enzyme_autodiff((void *)through_array, 2.0, enzyme_const, t, enzyme_const, x,
                                                enzyme_const, y), want, TOL);
    check("function's array, shadowed", __enzyme_autodiff((void *)through_array, 2.0, enzyme_dup, t, dt,
                                                           enzyme_const, x, enzyme_const, y), want, TOL);
    check("function's heap", __enzyme_autodiff((void *)through_heap, 2.0, enzyme_const, x, enzyme_const, y), want,
          TOL);
    check("global", __enzyme_autodiff((void *)through_global, 2.0, enzyme_const, x, enzyme_const, y), want, TOL);
    check("callee", __enzyme_autodiff((void *)from_callee, 2.0, enzyme_const, x, enzyme_const, y), want, TOL);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
#pragma float_control(pop)
