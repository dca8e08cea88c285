/* Vector outputs through *out parameters (polar coordinates, mean/variance/third moment): the caller seeds the output shadow, gets the vector-Jacobian product and finds the output shadow zeroed; forward fills the output shadow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-8

static void polar(const double *xy, double *rt) {
    rt[0] = sqrt(xy[0] * xy[0] + xy[1] * xy[1]);
    rt[1] = atan2(xy[1], xy[0]);
}

/* out = {mean, population variance, mean of cubes} */
static void moments(const double *x, int n, double *out) {
    double m = 0.0, v = 0.0, c = 0.0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) {
        v += (x[i] - m) * (x[i] - m);
        c += x[i] * x[i] * x[i];
    }
    out[0] = m;
    out[1] = v / n;
    out[2] = c / n;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    static const double pts[][2] = {{1.5, 0.5}, {-0.75, 2.0}, {0.3, -1.2}};
    for (int p = 0; p < 3; p++) {
        double xy[2] = {pts[p][0], pts[p][1]}, dxy[2] = {0.0, 0.0}, rt[2], drt[2] = {0.7, -1.3};
        double x = xy[0], y = xy[1], r2 = x * x + y * y, r = sqrt(r2);
        __enzyme_autodiff((void *)polar, enzyme_dup, xy, dxy, enzyme_dup, rt, drt);
        check("polar d/dx", x, dxy[0], 0.7 * x / r + 1.3 * y / r2, TOL);
        check("polar d/dy", x, dxy[1], 0.7 * y / r - 1.3 * x / r2, TOL);
        check("polar primal r", x, rt[0], r, TOL);
        check("polar primal theta", x, rt[1], atan2(y, x), TOL);
        check("polar dr zeroed", x, drt[0], 0.0, TOL);
        check("polar dtheta zeroed", x, drt[1], 0.0, TOL);
        double txy[2] = {0.25, -0.5};
        __enzyme_fwddiff((void *)polar, enzyme_dup, xy, txy, enzyme_dup, rt, drt);
        check("polar forward dr", x, drt[0], (0.25 * x - 0.5 * y) / r, TOL);
        check("polar forward dtheta", x, drt[1], (-0.5 * x - 0.25 * y) / r2, TOL);
    }

    int n = argc + 9; /* 10 */
    double x[NMAX], dx[NMAX], t[NMAX], out[3], dout[3];
    for (int i = 0; i < n; i++) { x[i] = sin(1.9 * i) + 0.1 * i; dx[i] = 0.0; t[i] = 1.0 / (i + 1.0); }
    double m = 0.0;
    for (int i = 0; i < n; i++) m += x[i] / n;
    const double a = 1.5, b = -0.5, c = 2.0;
    dout[0] = a; dout[1] = b; dout[2] = c;
    __enzyme_autodiff((void *)moments, enzyme_dup, x, dx, n, enzyme_dup, out, dout);
    double fwd[3] = {0.0, 0.0, 0.0};
    for (int i = 0; i < n; i++) {
        check("moments dx", i, dx[i], a / n + b * 2.0 * (x[i] - m) / n + c * 3.0 * x[i] * x[i] / n, TOL);
        fwd[0] += t[i] / n;
        fwd[1] += 2.0 * (x[i] - m) * t[i] / n;
        fwd[2] += 3.0 * x[i] * x[i] * t[i] / n;
    }
    for (int k = 0; k < 3; k++) check("moments dout zeroed", k, dout[k], 0.0, TOL);
    for (int k = 0; k < 3; k++) dout[k] = 0.0;
    __enzyme_fwddiff((void *)moments, enzyme_dup, x, t, n, enzyme_dup, out, dout);
    for (int k = 0; k < 3; k++) check("moments forward", k, dout[k], fwd[k], TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
