/* Float arithmetic: polynomials, a loop, a float pair of derivatives, forward mode with two float tangents. */
#include <stdio.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

/* float functions get typed prototypes (a float passed through "..." would become a double).
   Two active floats: the derivatives come back as a float pair (a <2 x float> on x86-64). */
typedef struct { float dx, dy; } fgrad2;
extern fgrad2 __enzyme_autodiff_ff(float (*)(float, float), float, float);
extern float __enzyme_fwddiff_ff(float (*)(float, float), float, float, float, float);
extern float __enzyme_fwddiff_fff(float (*)(float, float, float), float, float, float, float,
                                  float, float);

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

#define FTOL 1e-4

extern float __enzyme_autodiff_f(float (*)(float), float);
extern float __enzyme_fwddiff_f(float (*)(float), float, float);

static float poly(float x) { return 2.0f * x * x * x - 3.0f * x + 0.5f; }
static float ratio(float x) { return (x + 1.0f) / (x * x + 2.0f); }
static int steps;
static float iterate(float x) {
    float s = x;
    for (int i = 0; i < steps; i++)
        s = 0.5f * s + x * x / (i + 1);
    return s;
}
static float area(float w, float h) { return w * h + 2.0f * (w + h); }
static float heron(float a, float b) { return sqrtf(a * a + b * b) + a * b / (a + b); }

/* iterate: s_{k+1} = s_k / 2 + x^2 / (k + 1) */
static double d_iterate(double x, int n) {
    double s = x, d = 1.0;
    for (int i = 0; i < n; i++) {
        s = 0.5 * s + x * x / (i + 1);
        d = 0.5 * d + 2.0 * x / (i + 1);
    }
    return d;
}

int main(int argc, char **argv) {
    (void)argv;
    steps = argc + 5; /* 6, known only at run time */
    static const float xs[] = {-1.75f, -0.5f, 0.25f, 1.125f, 2.5f};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        float x = xs[i];
        double d = x;
        check("poly reverse", d, __enzyme_autodiff_f(poly, x), 6.0 * d * d - 3.0, FTOL);
        check("poly forward", d, __enzyme_fwddiff_f(poly, x, 1.0f), 6.0 * d * d - 3.0, FTOL);
        double q = d * d + 2.0, dr = 1.0 / q - (d + 1.0) * 2.0 * d / (q * q);
        check("ratio reverse", d, __enzyme_autodiff_f(ratio, x), dr, FTOL);
        check("ratio forward", d, __enzyme_fwddiff_f(ratio, x, 1.0f), dr, FTOL);
        check("iterate reverse", d, __enzyme_autodiff_f(iterate, x), d_iterate(d, steps), FTOL);
        check("iterate forward", d, __enzyme_fwddiff_f(iterate, x, 1.0f), d_iterate(d, steps), FTOL);

        float y = 3.0f - x;
        double e = y;
        fgrad2 g = __enzyme_autodiff_ff(area, x, y);
        check("area d/dw", d, g.dx, e + 2.0, FTOL);
        check("area d/dh", d, g.dy, d + 2.0, FTOL);
        check("area forward", d, __enzyme_fwddiff_ff(area, x, 1.0f, y, 1.0f), d + e + 4.0, FTOL);

        if (x > 0) {
            double r = sqrt(d * d + e * e), s = d + e;
            double ha = d / r + (e * s - d * e) / (s * s), hb = e / r + (d * s - d * e) / (s * s);
            g = __enzyme_autodiff_ff(heron, x, y);
            check("heron d/da", d, g.dx, ha, FTOL);
            check("heron d/db", d, g.dy, hb, FTOL);
            check("heron forward", d, __enzyme_fwddiff_ff(heron, x, 0.5f, y, 2.0f), 0.5 * ha + 2.0 * hb, FTOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
