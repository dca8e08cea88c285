// Enzyme's return markers, issue 24 item 1: enzyme_primal_return (reverse mode returns
// {primal, derivatives...}; forward mode {primal, tangent}), enzyme_const_return (the
// result is not seeded / has no tangent), enzyme_active_return, enzyme_dup_return and
// enzyme_noret.
#include <math.h>
#include <stdio.h>

extern int enzyme_dup, enzyme_const, enzyme_primal_return, enzyme_const_return, enzyme_active_return,
    enzyme_dup_return, enzyme_noret;
typedef struct { double value, dx, dy; } value_and_grad;
typedef struct { double value, tangent; } value_and_tangent;
extern value_and_grad __enzyme_autodiff_vg(void *, ...);
extern double __enzyme_autodiff(void *, ...);
extern void __enzyme_autodiff_void(void *, ...);
extern value_and_tangent __enzyme_fwddiff_vt(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-12 * (1 + fabs(want))) {
        printf("FAIL %s: got %.17g want %.17g\n", what, got, want);
        failures++;
    }
}

double f(double x, double y) { return sin(x) * y * y; }

double g(double *p, double x) {  // writes p[0] and returns a value
    p[0] = x * p[0];
    return p[0] + x;
}

int main(void) {
    double x = 0.7, y = 1.9;
    value_and_grad r = __enzyme_autodiff_vg((void *)f, enzyme_primal_return, x, y);
    check("primal", r.value, sin(x) * y * y);
    check("dx", r.dx, cos(x) * y * y);
    check("dy", r.dy, 2 * sin(x) * y);
    double p[1] = {2.0}, dp[1] = {1.0};
    // const return: only the adjoint in dp[0] (of p[0] after the call) flows back
    double dxg = __enzyme_autodiff((void *)g, enzyme_const_return, enzyme_dup, p, dp, x);
    check("const_return dx", dxg, 2.0);
    check("const_return dp", dp[0], x);
    double q[1] = {2.0}, dq[1] = {0.0};
    double dxa = __enzyme_autodiff((void *)g, enzyme_active_return, enzyme_noret, enzyme_dup, q, dq, x);
    check("active_return dx", dxa, 2.0 + 1.0);
    check("active_return dq", dq[0], x);

    value_and_tangent t = __enzyme_fwddiff_vt((void *)f, enzyme_primal_return, x, 1.0, y, 0.5);
    check("fwd primal", t.value, sin(x) * y * y);
    check("fwd tangent", t.tangent, cos(x) * y * y + 0.5 * 2 * sin(x) * y);
    double only = __enzyme_fwddiff((void *)f, enzyme_dup_return, x, 1.0, y, 0.0);
    check("fwd dup_return", only, cos(x) * y * y);
    double r2[1] = {2.0}, dr2[1] = {0.0};
    double primal_only = __enzyme_fwddiff((void *)g, enzyme_const_return, enzyme_primal_return, enzyme_dup, r2, dr2,
                                          x, 1.0);
    check("fwd const_return primal", primal_only, 2.0 * x + x);
    check("fwd const_return shadow", dr2[0], 2.0);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
