/* Integers stored over doubles (issue 23): a union written through its integer member, and a
   double in enzyme_dup memory set from a long's bytes. The stored bits carry no derivative,
   so the value read back has none; the double's old derivative used to survive in the shadow
   (a stale tangent in forward mode, a stale adjoint in reverse) at -O0 and with --no-preopt.
   Reverse and forward. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-12

union bits { double d; long long i; };

/* x*x, then the union's double is replaced by 1.5 through its integer member: 2*u.d + x */
static double reset_union(double x) {
    union bits u;
    u.d = x * x;
    u.i = 4609434218613702656LL; /* the bits of 1.5 */
    return 2.0 * u.d + x;
}

/* p[0] set to 1.0 from a long's bytes; p[1] kept: 3*p[0] + p[0]*p[1]... after the reset */
static double reset_through_memcpy(double *p) {
    long long one = 4607182418800017408LL; /* the bits of 1.0 */
    double before = p[0] * p[1];
    memcpy(p, &one, sizeof one);
    return 3.0 * p[0] + p[1] * before;
}

int main(void) {
    double x = 0.7;
    check("union reset, reverse", x, __enzyme_autodiff((void *)reset_union, x), 1.0, TOL);
    check("union reset, forward", x, __enzyme_fwddiff((void *)reset_union, x, 1.0), 1.0, TOL);

    /* f = 3 + p1 * (p0 * p1) with p0 read before the reset: df/dp0 = p1^2, df/dp1 = 2 p0 p1 */
    double p[2] = {0.5, -1.25}, dp[2] = {0.0, 0.0};
    __enzyme_autodiff((void *)reset_through_memcpy, enzyme_dup, p, dp);
    check("memcpy reset, reverse d/dp0", 0.5, dp[0], 1.25 * 1.25, TOL);
    check("memcpy reset, reverse d/dp1", -1.25, dp[1], 2.0 * 0.5 * -1.25, TOL);
    for (int j = 0; j < 2; j++) {
        double q[2] = {0.5, -1.25}, t[2] = {j == 0, j == 1};
        double d = __enzyme_fwddiff((void *)reset_through_memcpy, enzyme_dup, q, t);
        check(j == 0 ? "memcpy reset, forward d/dp0" : "memcpy reset, forward d/dp1", q[j], d,
              j == 0 ? 1.25 * 1.25 : 2.0 * 0.5 * -1.25, TOL);
        check("memcpy reset, forward tangent of p0", 0.0, t[0], 0.0, TOL);
    }
    printf("%s\n", failures ? "FAILED" : "all ok");
    return failures != 0;
}
