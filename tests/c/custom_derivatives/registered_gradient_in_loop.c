// Registered custom gradients (__enzyme_register_gradient_<name>), issue 24 item 2: the
// user's augment/gradient pair replaces differentiation of the function's body wherever
// it is called from differentiated code: in a loop (one augment and one gradient per
// call, counted), from a callee zymase inlines, with active float arguments and result
// (the gradient returns the derivatives of the float arguments), and when the function
// itself is the one differentiated. The registered derivative is deliberately not the
// derivative of the body (softplus' body, a "smooth" derivative of a scaled logistic),
// so a test can only pass if the registered functions are used.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-12 * (1 + fabs(want))) {
        printf("FAIL %s: got %.17g want %.17g\n", what, got, want);
        failures++;
    }
}

// the primal: softplus(a * x)
double act(double x, double a) { return log1p(exp(a * x)); }

// the registered pair: the tape keeps e = exp(a x) on the heap (a real tape, freed by
// the gradient); the "derivative" returned is 2 * the true one, to be recognizable
static int augments = 0, gradients = 0;
typedef struct { void *tape; double value; } act_augmented;
typedef struct { double dx, da; } act_gradient;
act_augmented act_augment(double x, double a) {
    augments++;
    double *e = malloc(sizeof(double));
    *e = exp(a * x);
    act_augmented r = {e, log1p(*e)};
    return r;
}
act_gradient act_reverse(double x, double a, double d_out, void *tape) {
    gradients++;
    double e = *(double *)tape;
    free(tape);
    double s = e / (1 + e);
    act_gradient g = {2 * d_out * a * s, 2 * d_out * x * s};
    return g;
}
void *__enzyme_register_gradient_act[3] = {(void *)act, (void *)act_augment, (void *)act_reverse};

double layer(const double *x, int n, double a) {
    double s = 0;
    for (int i = 0; i < n; i++) s += act(x[i], a) * x[i];
    return s;
}
static double layer_twice(const double *x, int n, double a) { return layer(x, n, a) + act(a, 0.5); }

int main(void) {
    enum { N = 6 };
    double x[N] = {0.1, -0.4, 0.9, 1.3, -2.0, 0.25}, dx[N] = {0};
    double a = 0.7;
    double da = __enzyme_autodiff((void *)layer_twice, enzyme_dup, x, dx, enzyme_const, N, a);
    check("augment calls", augments, N + 1);
    check("gradient calls", gradients, N + 1);
    double want_da = 0;
    for (int i = 0; i < N; i++) {
        double e = exp(a * x[i]), s = e / (1 + e);
        check("d/dx", dx[i], x[i] * 2 * a * s + log1p(e));
        want_da += x[i] * 2 * x[i] * s;
    }
    double e = exp(0.5 * a);
    want_da += 2 * 0.5 * e / (1 + e);
    check("d/da", da, want_da);

    // the registered function itself differentiated: its gradient is used directly
    augments = gradients = 0;
    double d = __enzyme_autodiff((void *)act, 1.5, enzyme_const, 2.0);
    check("direct d/dx", d, 2 * 2.0 * exp(3.0) / (1 + exp(3.0)));
    check("direct calls", augments + gradients, 2);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
