/* The logistic map iterated a run-time number of times: derivatives in r and x0 by the tangent recurrence. */
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

static double logistic(double r, double x0, int n) {
    double x = x0;
    for (int k = 0; k < n; k++)
        x = r * x * (1.0 - x);
    return x;
}

/* x_{k+1} = r x_k (1 - x_k):  dx_{k+1} = x_k (1 - x_k) dr + r (1 - 2 x_k) dx_k */
static void tangents(double r, double x0, int n, double *by_r, double *by_x0) {
    double x = x0, dr = 0.0, dx = 1.0;
    for (int k = 0; k < n; k++) {
        double slope = r * (1.0 - 2.0 * x);
        dr = x * (1.0 - x) + slope * dr;
        dx = slope * dx;
        x = r * x * (1.0 - x);
    }
    *by_r = dr;
    *by_x0 = dx;
}

int main(int argc, char **argv) {
    (void)argv;
    static const double rs[] = {1.5, 2.5, 2.9, 3.2};
    static const double x0s[] = {0.1, 0.35, 0.8};
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; j < 3; j++)
            for (int n = 0; n <= 20; n += 4 + argc) { /* steps of 5, known at run time */
                double r = rs[i], x0 = x0s[j], wr, wx;
                tangents(r, x0, n, &wr, &wx);
                grad2 g = __enzyme_autodiff2((void *)logistic, r, x0, n);
                check("logistic d/dr", r, g.dx, wr, TOL);
                check("logistic d/dx0", r, g.dy, wx, TOL);
                check("logistic forward", r, __enzyme_fwddiff((void *)logistic, r, 1.0, x0, -1.0, n),
                      wr - wx, TOL);
            }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
