// Split reverse mode of functions that return a value, issue 24 item 1:
// __enzyme_augmentfwd returns {tape, primal result}; __enzyme_reverse takes the
// result's adjoint after the arguments, then the tape, and returns the derivatives of
// the active float arguments (a struct in argument order when there are several).
// enzyme_const_return: the result is not differentiated (no adjoint is passed).
#include <math.h>
#include <stdio.h>

extern int enzyme_dup, enzyme_const, enzyme_const_return;
typedef struct { void *tape; double value; } augmented;
typedef struct { double dx, dy; } grad2;
extern augmented __enzyme_augmentfwd(void *, ...);
extern grad2 __enzyme_reverse(void *, ...);
extern double __enzyme_reverse_1(void *, ...);
extern void *__enzyme_augmentfwd_v(void *, ...);
extern void __enzyme_reverse_v(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-9 * (1 + fabs(want))) {
        printf("FAIL %s: got %.15g want %.15g\n", what, got, want);
        failures++;
    }
}

double energy(double x, double y, const double *p, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += p[i] * pow(x, i) * cos(y * i);
    return s * y;
}

double scaled(double *p, double x) {
    p[0] = p[0] * x;  // writes its argument: the returned value is not the only output
    return p[0] * p[1];
}

int main(void) {
    double p[3] = {0.5, -1.25, 2.0}, dp[3] = {0, 0, 0};
    double x = 0.8, y = 1.3;
    augmented aug = __enzyme_augmentfwd((void *)energy, x, y, enzyme_dup, p, dp, enzyme_const, 3);
    check("primal", aug.value, energy(x, y, p, 3));
    p[0] = p[1] = p[2] = -7;  // clobbered; the reverse sweep reads the tape only
    grad2 g = __enzyme_reverse((void *)energy, x, y, enzyme_dup, p, dp, enzyme_const, 3, 2.0, aug.tape);
    double q[3] = {0.5, -1.25, 2.0};
    double wx = 0, wy = 0, s = 0;
    for (int i = 0; i < 3; i++) {
        wx += q[i] * (i ? i * pow(x, i - 1) : 0) * cos(y * i);
        s += q[i] * pow(x, i) * cos(y * i);
        wy += -q[i] * pow(x, i) * i * sin(y * i);
    }
    check("d/dx", g.dx, 2 * wx * y);
    check("d/dy", g.dy, 2 * (wy * y + s));
    for (int i = 0; i < 3; i++) check("d/dp", dp[i], 2 * pow(x, i) * cos(y * i) * y);

    // one active argument: the derivative comes back as a double
    double r[2] = {3.0, 0.25}, dr[2] = {0, 0};
    augmented a2 = __enzyme_augmentfwd((void *)scaled, enzyme_dup, r, dr, 1.5);
    check("scaled primal", a2.value, 3.0 * 1.5 * 0.25);
    double dxs = __enzyme_reverse_1((void *)scaled, enzyme_dup, r, dr, 1.5, 1.0, a2.tape);
    check("scaled d/dx", dxs, 3.0 * 0.25);
    check("scaled d/dp0", dr[0], 1.5 * 0.25);
    check("scaled d/dp1", dr[1], 3.0 * 1.5);

    // enzyme_const_return: only the memory written (p[0]) carries derivatives
    double u[2] = {3.0, 0.25}, du[2] = {1.0, 0.0};
    void *t3 = __enzyme_augmentfwd_v((void *)scaled, enzyme_const_return, enzyme_dup, u, du, enzyme_const, 1.5);
    __enzyme_reverse_v((void *)scaled, enzyme_const_return, enzyme_dup, u, du, enzyme_const, 1.5, t3);
    check("const return d/dp0", du[0], 1.5);
    check("const return d/dp1", du[1], 0.0);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
