/* libm two- and three-argument float functions: powf atan2f hypotf copysignf fminf fmaxf fmodf fmaf, float pairs. */
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

static float f_powf(float x, float y) { return powf(x, y); }
static float f_atan2f(float y, float x) { return atan2f(y, x); }
static float f_hypotf(float x, float y) { return hypotf(x, y); }
static float f_copysignf(float x, float y) { return copysignf(x, y); }
static float f_fminf(float x, float y) { return fminf(x, y); }
static float f_fmaxf(float x, float y) { return fmaxf(x, y); }
static float f_fmodf(float x, float y) { return fmodf(x, y); }
static float f_divf(float x, float y) { return x / y - x * y; }
static float f_fmaf(float x, float y, float z) { return fmaf(x, y, z); }

static double sign(double v) { return copysign(1.0, v); }

/* a macro, not a function: the differentiated function must be known at the call */
#define PAIR(what, a, b, f, da, db)                                                   \
    do {                                                                              \
        fgrad2 g = __enzyme_autodiff_ff(f, a, b);                                     \
        check(what " d/da", a, g.dx, da, FTOL);                                       \
        check(what " d/db", a, g.dy, db, FTOL);                                       \
        check(what " forward", a, __enzyme_fwddiff_ff(f, a, 1.0f, b, -0.5f),          \
              (da) - 0.5 * (db), FTOL);                                               \
    } while (0)

int main(void) {
    static const float pts[][2] = {{1.25f, 2.5f}, {0.375f, -1.75f}, {3.5f, 0.625f}, {-2.25f, 1.375f}};
    for (unsigned i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        double a = pts[i][0], b = pts[i][1], r2 = a * a + b * b, n = trunc(a / b);
        float fa = pts[i][0], fb = pts[i][1];
        if (a > 0)
            PAIR("powf", fa, fb, f_powf, b * pow(a, b - 1.0), pow(a, b) * log(a));
        PAIR("atan2f", fa, fb, f_atan2f, b / r2, -a / r2);
        PAIR("hypotf", fa, fb, f_hypotf, a / sqrt(r2), b / sqrt(r2));
        PAIR("copysignf", fa, fb, f_copysignf, sign(a) * sign(b), 0.0);
        PAIR("fminf", fa, fb, f_fminf, (double)(a < b), (double)(a >= b));
        PAIR("fmaxf", fa, fb, f_fmaxf, (double)(a > b), (double)(a <= b));
        PAIR("fmodf", fa, fb, f_fmodf, 1.0, -n);
        PAIR("divf", fa, fb, f_divf, 1.0 / b - b, -a / (b * b) - a);

        float x = pts[i][0], y = pts[i][1], z = 0.75f;
        check("fmaf forward (1,0,0)", x, __enzyme_fwddiff_fff(f_fmaf, x, 1.0f, y, 0.0f, z, 0.0f), y, FTOL);
        check("fmaf forward (0,1,0)", x, __enzyme_fwddiff_fff(f_fmaf, x, 0.0f, y, 1.0f, z, 0.0f), x, FTOL);
        check("fmaf forward (0,0,1)", x, __enzyme_fwddiff_fff(f_fmaf, x, 0.0f, y, 0.0f, z, 1.0f), 1.0, FTOL);
        check("fmaf forward (1,2,3)", x, __enzyme_fwddiff_fff(f_fmaf, x, 1.0f, y, 2.0f, z, 3.0f),
              (double)y + 2.0 * x + 3.0, FTOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
