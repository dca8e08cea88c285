/* Five active inputs: the gradient comes back as a 5-field struct via sret; forward mode gives each component. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* Five active doubles: their derivatives come back as a 40-byte struct, in argument order
   (returned through a hidden sret pointer on x86-64). */
typedef struct { double da, db, dc, dd, de; } grad5;
extern grad5 __enzyme_autodiff5(void *, double, double, double, double, double);

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

static double f(double a, double b, double c, double d, double e) {
    return a * b + sin(c) * d - e * e * e / (1.0 + a * a) + sqrt(d * d + e * e);
}

int main(void) {
    static const double pts[][5] = {
        {1.0, 2.0, 0.5, -1.0, 0.25},
        {-0.5, 0.75, 2.0, 3.0, -1.5},
        {2.5, -1.25, -0.8, 0.4, 1.1},
    };
    for (unsigned i = 0; i < 3; i++) {
        double a = pts[i][0], b = pts[i][1], c = pts[i][2], d = pts[i][3], e = pts[i][4];
        double q = 1.0 + a * a, r = sqrt(d * d + e * e);
        double want[5] = {
            b + e * e * e * 2.0 * a / (q * q),
            a,
            cos(c) * d,
            sin(c) + d / r,
            -3.0 * e * e / q + e / r,
        };
        grad5 g = __enzyme_autodiff5((void *)f, a, b, c, d, e);
        double got[5] = {g.da, g.db, g.dc, g.dd, g.de};
        static const char *names[5] = {"d/da", "d/db", "d/dc", "d/dd", "d/de"};
        for (int k = 0; k < 5; k++) {
            char what[40];
            snprintf(what, sizeof what, "reverse %s", names[k]);
            check(what, a, got[k], want[k], TOL);
        }
        /* forward mode, one unit tangent at a time, then all at once */
        check("forward e_a", a, __enzyme_fwddiff((void *)f, a, 1.0, b, 0.0, c, 0.0, d, 0.0, e, 0.0), want[0], TOL);
        check("forward e_b", a, __enzyme_fwddiff((void *)f, a, 0.0, b, 1.0, c, 0.0, d, 0.0, e, 0.0), want[1], TOL);
        check("forward e_c", a, __enzyme_fwddiff((void *)f, a, 0.0, b, 0.0, c, 1.0, d, 0.0, e, 0.0), want[2], TOL);
        check("forward e_d", a, __enzyme_fwddiff((void *)f, a, 0.0, b, 0.0, c, 0.0, d, 1.0, e, 0.0), want[3], TOL);
        check("forward e_e", a, __enzyme_fwddiff((void *)f, a, 0.0, b, 0.0, c, 0.0, d, 0.0, e, 1.0), want[4], TOL);
        check("forward (1,2,3,4,5)", a, __enzyme_fwddiff((void *)f, a, 1.0, b, 2.0, c, 3.0, d, 4.0, e, 5.0),
              want[0] + 2 * want[1] + 3 * want[2] + 4 * want[3] + 5 * want[4], TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
