/* Black-Scholes call price with erf: delta and vega in reverse mode (strike, rate, maturity enzyme_const), forward mode agrees. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* Several active doubles: Enzyme returns their derivatives as a struct, in argument order.
   A second prototype needs a second name; any name containing __enzyme_autodiff works. */
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, ...);

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-9

static double norm_cdf(double x) { return 0.5 * (1.0 + erf(x / sqrt(2.0))); }
static double norm_pdf(double x) { return exp(-0.5 * x * x) / sqrt(2.0 * 3.14159265358979323846); }

/* price of a European call: spot s, volatility v, strike k, rate r, maturity t */
static double call_price(double s, double v, double k, double r, double t) {
    double sd = v * sqrt(t);
    double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / sd;
    double d2 = d1 - sd;
    return s * norm_cdf(d1) - k * exp(-r * t) * norm_cdf(d2);
}

int main(void) {
    static const double cases[][5] = {
        {100.0, 0.2, 100.0, 0.05, 1.0},
        {90.0, 0.35, 100.0, 0.01, 0.5},
        {120.0, 0.15, 100.0, 0.03, 2.0},
    };
    for (unsigned i = 0; i < 3; i++) {
        double s = cases[i][0], v = cases[i][1], k = cases[i][2], r = cases[i][3], t = cases[i][4];
        double d1 = (log(s / k) + (r + 0.5 * v * v) * t) / (v * sqrt(t));
        double delta = norm_cdf(d1), vega = s * norm_pdf(d1) * sqrt(t);
        grad2 g = __enzyme_autodiff2((void *)call_price, s, v, enzyme_const, k, enzyme_const, r,
                                     enzyme_const, t);
        check("delta (reverse)", s, g.dx, delta, TOL);
        check("vega (reverse)", s, g.dy, vega, TOL);
        check("delta (forward)", s,
              __enzyme_fwddiff((void *)call_price, s, 1.0, v, 0.0, enzyme_const, k, enzyme_const, r,
                               enzyme_const, t),
              delta, TOL);
        check("vega (forward)", s,
              __enzyme_fwddiff((void *)call_price, s, 0.0, v, 1.0, enzyme_const, k, enzyme_const, r,
                               enzyme_const, t),
              vega, TOL);
        check("delta, only s active", s,
              __enzyme_autodiff((void *)call_price, s, enzyme_const, v, enzyme_const, k,
                                enzyme_const, r, enzyme_const, t),
              delta, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
