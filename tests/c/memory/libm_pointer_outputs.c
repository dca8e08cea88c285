/* libm functions that write results through pointers (issue 24 item 6): frexp's exponent, modf's
   integral part, remquo's quotient bits, sincos's sine and cosine; double, float and long double,
   reverse and forward mode, with the outputs in locals and in duplicated (enzyme_dup) memory.
   frexp: m = x 2^-e, dm/dx = 2^-e, the int e has no derivative. modf: frac = x - int, d frac/dx = 1,
   the integral part has derivative 0 (its shadow is set to 0 forward, its seed dropped reverse).
   remquo(x, y) = x - n y with n = x/y rounded to nearest: d/dx = 1, d/dy = -n. sincos: ds = cos dx,
   dc = -sin dx. Points stay away from powers of two, integers and half-integer quotients. */
#define _GNU_SOURCE
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);
extern grad2 __enzyme_autodiff2_out(void *, double, double, int, double *, double *);
float __enzyme_autodiff_f(float (*)(float), float);
float __enzyme_fwddiff_f(float (*)(float), float, float);

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
#define FTOL 1e-4

/* ---- outputs in locals -------------------------------------------------------------------- */
/* d/dx = 2^-e (m + 1): the exponent read back is a constant */
static double frexp_local(double x) { int e; double m = frexp(x, &e); return m * (m + 2.0) + e; }
static double frexpl_local(double x) { int e; long double m = frexpl(x, &e); return (double)(m * (m + 2.0L)) + e; }
static float frexpf_local(float x) { int e; float m = frexpf(x, &e); return m * (m + 2.0f) + (float)e; }
/* d/dx = 3 * 2x */
static double modf_local(double x) { double ip; double fr = modf(x * x, &ip); return 3.0 * fr + ip; }
static double modfl_local(double x) { long double ip; long double fr = modfl((long double)x * x, &ip); return (double)(3.0L * fr + ip); }
static float modff_local(float x) { float ip; float fr = modff(x * x, &ip); return 3.0f * fr + ip; }
/* grad = (1, -n) */
static double remquo_local(double x, double y) { int q; double r = remquo(x, y, &q); return r + 0.0 * q; }
static double remquol_local(double x, double y) { int q; long double r = remquol(x, y, &q); return (double)r + 0.0 * q; }
static float remquof_local(float x) { int q; return remquof(x, 0.75f, &q); }
/* s c = sin(2x) / 2: d/dx = cos(2x) */
static double sincos_local(double x) { double s, c; sincos(x, &s, &c); return s * c; }
static double sincosl_local(double x) { long double s, c; sincosl(x, &s, &c); return (double)(s * c); }
static float sincosf_local(float x) { float s, c; sincosf(x, &s, &c); return s * c; }
/* only the cosine is used */
static double sincos_cos_only(double x) { double s, c; sincos(3.0 * x, &s, &c); return c; }

/* ---- outputs in duplicated memory --------------------------------------------------------- */
typedef struct { double m; int e; } mant_exp;
static void frexp_struct(double x, mant_exp *out) { out->m = frexp(x, &out->e); }
static void modf_out(double x, double *fr, double *ip) { *fr = modf(x, ip); }
static void sincos_out(double x, double *s, double *c) { sincos(x, s, c); }
static void remquo_out(double x, double y, double *r) { int q; *r = remquo(x, y, &q); }

/* all four in a loop with a run-time count: the reverse sweep reads the values of every iteration */
static double loop_all(double x, int n) {
    double acc = 0.0;
    for (int i = 1; i <= n; i++) {
        int e, q;
        double ip, s, c;
        double m = frexp(x * i, &e), fr = modf(x * i, &ip), r = remquo(x * i, 0.7, &q);
        sincos(x * i, &s, &c);
        acc += m * m + fr * fr + r * r + s * c + e + ip + q;
    }
    return acc;
}

/* d/dx loop_all = sum_i i (2 m_i 2^-e_i + 2 fr_i + 2 r_i + cos(2 x i)) */
static double loop_all_derivative(double x, int n) {
    double d = 0.0;
    for (int i = 1; i <= n; i++) {
        int e, q;
        double ip, m = frexp(x * i, &e), fr = modf(x * i, &ip), r = remquo(x * i, 0.7, &q);
        d += i * (2.0 * m * ldexp(1.0, -e) + 2.0 * fr + 2.0 * r + cos(2.0 * x * i));
    }
    return d;
}

static void test(double x, double y) {
    int e;
    double m = frexp(x, &e), p = ldexp(1.0, -e);
    check("frexp reverse", x, __enzyme_autodiff((void *)frexp_local, x), p * (2.0 * m + 2.0), TOL);
    check("frexp forward", x, __enzyme_fwddiff((void *)frexp_local, x, 0.5), 0.5 * p * (2.0 * m + 2.0), TOL);
    check("frexpl reverse", x, __enzyme_autodiff((void *)frexpl_local, x), p * (2.0 * m + 2.0), TOL);
    check("frexpl forward", x, __enzyme_fwddiff((void *)frexpl_local, x, 0.5), 0.5 * p * (2.0 * m + 2.0), TOL);
    check("frexpf reverse", x, __enzyme_autodiff_f(frexpf_local, (float)x), p * (2.0 * m + 2.0), FTOL);
    check("frexpf forward", x, __enzyme_fwddiff_f(frexpf_local, (float)x, 0.5f), 0.5 * p * (2.0 * m + 2.0), FTOL);

    check("modf reverse", x, __enzyme_autodiff((void *)modf_local, x), 6.0 * x, TOL);
    check("modf forward", x, __enzyme_fwddiff((void *)modf_local, x, 2.0), 12.0 * x, TOL);
    check("modfl reverse", x, __enzyme_autodiff((void *)modfl_local, x), 6.0 * x, TOL);
    check("modfl forward", x, __enzyme_fwddiff((void *)modfl_local, x, 2.0), 12.0 * x, TOL);
    check("modff reverse", x, __enzyme_autodiff_f(modff_local, (float)x), 6.0 * x, FTOL);
    check("modff forward", x, __enzyme_fwddiff_f(modff_local, (float)x, 2.0f), 12.0 * x, FTOL);

    double n = nearbyint(x / y);
    grad2 g = __enzyme_autodiff2((void *)remquo_local, x, y);
    check("remquo d/dx", x, g.dx, 1.0, TOL);
    check("remquo d/dy", x, g.dy, -n, TOL);
    check("remquo forward", x, __enzyme_fwddiff((void *)remquo_local, x, 1.0, y, 0.5), 1.0 - 0.5 * n, TOL);
    g = __enzyme_autodiff2((void *)remquol_local, x, y);
    check("remquol d/dx", x, g.dx, 1.0, TOL);
    check("remquol d/dy", x, g.dy, -n, TOL);
    check("remquol forward", x, __enzyme_fwddiff((void *)remquol_local, x, 1.0, y, 0.5), 1.0 - 0.5 * n, TOL);
    check("remquof reverse", x, __enzyme_autodiff_f(remquof_local, (float)x), 1.0, FTOL);
    check("remquof forward", x, __enzyme_fwddiff_f(remquof_local, (float)x, 3.0f), 3.0, FTOL);

    check("sincos reverse", x, __enzyme_autodiff((void *)sincos_local, x), cos(2.0 * x), TOL);
    check("sincos forward", x, __enzyme_fwddiff((void *)sincos_local, x, 2.0), 2.0 * cos(2.0 * x), TOL);
    check("sincosl reverse", x, __enzyme_autodiff((void *)sincosl_local, x), cos(2.0 * x), TOL);
    check("sincosl forward", x, __enzyme_fwddiff((void *)sincosl_local, x, 2.0), 2.0 * cos(2.0 * x), TOL);
    check("sincosf reverse", x, __enzyme_autodiff_f(sincosf_local, (float)x), cos(2.0 * (float)x), FTOL);
    check("sincosf forward", x, __enzyme_fwddiff_f(sincosf_local, (float)x, 2.0f), 2.0 * cos(2.0 * (float)x), FTOL);
    check("sincos cosine only reverse", x, __enzyme_autodiff((void *)sincos_cos_only, x), -3.0 * sin(3.0 * x), TOL);
    check("sincos cosine only forward", x, __enzyme_fwddiff((void *)sincos_cos_only, x, 1.0), -3.0 * sin(3.0 * x), TOL);
    /* against a central difference once */
    double h = 1e-6, fd = (sincos_local(x + h) - sincos_local(x - h)) / (2.0 * h);
    check("sincos central difference", x, __enzyme_autodiff((void *)sincos_local, x), fd, 1e-6);

    /* frexp into a struct that also holds an active double: the int field's shadow is untouched */
    mant_exp out = {0.0, 0}, dout = {0.7, 0};
    double dx = __enzyme_autodiff((void *)frexp_struct, x, enzyme_dup, &out, &dout);
    check("frexp struct reverse dx", x, dx, 0.7 * p, TOL);
    check("frexp struct reverse seed consumed", x, dout.m, 0.0, TOL);
    check("frexp struct primal e", x, out.e, e, TOL);
    dout.m = 9.0;
    __enzyme_fwddiff((void *)frexp_struct, x, 2.0, enzyme_dup, &out, &dout);
    check("frexp struct forward", x, dout.m, 2.0 * p, TOL);

    /* modf into duplicated memory: the integral part's shadow is 0 afterwards */
    double fr = 0.0, ip = 0.0, dfr = 0.4, dip = 0.9;
    dx = __enzyme_autodiff((void *)modf_out, x, enzyme_dup, &fr, &dfr, enzyme_dup, &ip, &dip);
    check("modf out reverse dx", x, dx, 0.4, TOL);
    check("modf out reverse fr seed consumed", x, dfr, 0.0, TOL);
    check("modf out reverse ip seed dropped", x, dip, 0.0, TOL);
    check("modf out primal ip", x, ip, trunc(x), TOL);
    dfr = 5.0, dip = 5.0;
    __enzyme_fwddiff((void *)modf_out, x, 3.0, enzyme_dup, &fr, &dfr, enzyme_dup, &ip, &dip);
    check("modf out forward fr", x, dfr, 3.0, TOL);
    check("modf out forward ip", x, dip, 0.0, TOL);

    /* sincos into duplicated memory */
    double s = 0.0, c = 0.0, ds = 0.3, dc = -0.8;
    dx = __enzyme_autodiff((void *)sincos_out, x, enzyme_dup, &s, &ds, enzyme_dup, &c, &dc);
    check("sincos out reverse dx", x, dx, 0.3 * cos(x) + 0.8 * sin(x), TOL);
    check("sincos out reverse s seed consumed", x, ds, 0.0, TOL);
    check("sincos out reverse c seed consumed", x, dc, 0.0, TOL);
    check("sincos out primal s", x, s, sin(x), TOL);
    check("sincos out primal c", x, c, cos(x), TOL);
    ds = 5.0, dc = 5.0;
    __enzyme_fwddiff((void *)sincos_out, x, 1.5, enzyme_dup, &s, &ds, enzyme_dup, &c, &dc);
    check("sincos out forward s", x, ds, 1.5 * cos(x), TOL);
    check("sincos out forward c", x, dc, -1.5 * sin(x), TOL);

    /* remquo's remainder into duplicated memory, both inputs active */
    double r = 0.0, dr = 2.0;
    g = __enzyme_autodiff2_out((void *)remquo_out, x, y, enzyme_dup, &r, &dr);
    check("remquo out d/dx", x, g.dx, 2.0, TOL);
    check("remquo out d/dy", x, g.dy, -2.0 * n, TOL);
    check("remquo out seed consumed", x, dr, 0.0, TOL);
}

int main(int argc, char **argv) {
    (void)argv;
    /* x i stays away from powers of two, integers and half-integer multiples of 0.7 */
    int n = 4 + argc;
    check("loop reverse", 1.1234, __enzyme_autodiff((void *)loop_all, 1.1234, n), loop_all_derivative(1.1234, n), TOL);
    check("loop forward", 1.1234, __enzyme_fwddiff((void *)loop_all, 1.1234, 1.0, n), loop_all_derivative(1.1234, n), TOL);
    /* x/y and x/0.75 stay away from half-integers; x away from integers and powers of two */
    static const double pts[][2] = {{0.8125, 0.3}, {-2.375, 0.7}, {5.25, -1.1}, {-0.3125, 2.9}};
    for (int i = 0; i < 4; i++) test(pts[i][0] * (argc > 0 ? 1 : 2), pts[i][1]);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
