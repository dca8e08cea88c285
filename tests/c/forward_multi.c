/* Forward mode with several arguments: each active double followed by its tangent, enzyme_const args without tangent, ints without tangent. */
#include <stdio.h>
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

#define TOL 1e-9

static double f2(double x, double y) { return x * x * y + sin(y); }
static double f4(double a, double b, double c, double d) { return a * b - c / d + exp(a * d) * c; }
static double fint(double x, int n, double y) { return pow(x, n) * y + n * y * y; }

int main(void) {
    static const double pts[][2] = {{1.5, -0.5}, {-0.25, 2.0}, {3.0, 0.75}};
    static const double tangents[][2] = {{1.0, 0.0}, {0.0, 1.0}, {0.5, -2.0}};
    for (unsigned i = 0; i < 3; i++) {
        double x = pts[i][0], y = pts[i][1];
        double fx = 2.0 * x * y, fy = x * x + cos(y);
        for (unsigned t = 0; t < 3; t++) {
            double dx = tangents[t][0], dy = tangents[t][1];
            check("f2 forward", x, __enzyme_fwddiff((void *)f2, x, dx, y, dy), fx * dx + fy * dy, TOL);
        }
        /* enzyme_const: x has no tangent, only y varies */
        check("f2 forward, x const", x, __enzyme_fwddiff((void *)f2, enzyme_const, x, y, 1.5), fy * 1.5, TOL);
        check("f2 forward, y const", x, __enzyme_fwddiff((void *)f2, x, 1.5, enzyme_const, y), fx * 1.5, TOL);
        /* agrees with reverse mode component by component */
        check("f2 reverse, x const", x, __enzyme_autodiff((void *)f2, enzyme_const, x, y), fy, TOL);

        double a = x, b = y, c = 0.5 * x - y, d = 1.0 + y * y;
        double e = exp(a * d);
        double da = b + e * d * c, db = a, dc = -1.0 / d + e, dd = c / (d * d) + e * a * c;
        check("f4 forward (1,1,1,1)", a, __enzyme_fwddiff((void *)f4, a, 1.0, b, 1.0, c, 1.0, d, 1.0),
              da + db + dc + dd, TOL);
        check("f4 forward (0.5,-1,2,0.25)", a,
              __enzyme_fwddiff((void *)f4, a, 0.5, b, -1.0, c, 2.0, d, 0.25),
              0.5 * da - db + 2.0 * dc + 0.25 * dd, TOL);
        check("f4 forward, b and d const", a,
              __enzyme_fwddiff((void *)f4, a, 1.0, enzyme_const, b, c, 3.0, enzyme_const, d),
              da + 3.0 * dc, TOL);

        for (int n = 0; n < 4; n++) {
            double want = (n ? n * pow(x, n - 1) : 0.0) * y * 2.0 + (pow(x, n) + 2.0 * n * y) * -1.0;
            check("fint forward", x, __enzyme_fwddiff((void *)fint, x, 2.0, n, y, -1.0), want, TOL);
            check("fint forward, int marked const", x,
                  __enzyme_fwddiff((void *)fint, x, 2.0, enzyme_const, n, y, -1.0), want, TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
