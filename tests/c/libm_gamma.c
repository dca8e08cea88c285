/* lgamma and tgamma: their derivatives need digamma, which zymase defines in the module.
   Checked against closed forms of digamma (psi) at points where it has one, in double and
   float, forward and reverse, including the reflection for negative x. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern float __enzyme_autodiff_f(void *, ...);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-20s at %-8g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

static const double EULER_GAMMA = 0.57721566490153286061;

double lg(double x) { return lgamma(x); }
double tg(double x) { return tgamma(x); }
float lgf(float x) { return lgammaf(x); }

int main(void) {
    const double ln2 = log(2.0);
    /* psi(1) = -gamma, psi(2) = 1 - gamma, psi(1/2) = -gamma - 2 ln 2, psi(-1/2) = 2 - gamma - 2 ln 2,
       psi(10) = H_9 - gamma, psi(100) = H_99 - gamma */
    double h9 = 0, h99 = 0;
    for (int k = 1; k <= 99; k++) {
        if (k <= 9) h9 += 1.0 / k;
        h99 += 1.0 / k;
    }
    const double xs[] = {1.0, 2.0, 0.5, -0.5, 10.0, 100.0};
    const double psi[] = {-EULER_GAMMA, 1 - EULER_GAMMA, -EULER_GAMMA - 2 * ln2, 2 - EULER_GAMMA - 2 * ln2,
                          h9 - EULER_GAMMA, h99 - EULER_GAMMA};
    for (int i = 0; i < 6; i++) {
        check("lgamma reverse", xs[i], __enzyme_autodiff((void *)lg, xs[i]), psi[i], 1e-14);
        check("lgamma forward", xs[i], __enzyme_fwddiff((void *)lg, xs[i], 1.0), psi[i], 1e-14);
        if (xs[i] < 20)
            check("tgamma reverse", xs[i], __enzyme_autodiff((void *)tg, xs[i]), tgamma(xs[i]) * psi[i], 1e-13);
    }
    check("lgammaf reverse", 0.5, __enzyme_autodiff_f((void *)lgf, 0.5f), -EULER_GAMMA - 2 * ln2, 1e-6);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
