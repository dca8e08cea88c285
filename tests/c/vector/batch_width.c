// Batched evaluation (issue 25 item 2): __enzyme_batch(f, enzyme_width, N, ...)
// runs f on N inputs in one call. Arguments are vector by default (given N times,
// one per lane); enzyme_scalar makes the next one shared by the lanes, enzyme_vector
// says it explicitly, enzyme_buffer, stride, p gives N pointers `stride` bytes apart.
// The result is a struct of N results. Every batched call is checked lane by lane
// against N scalar calls of f, and those against closed forms, at widths 1, 2, 3, 4:
// scalars with a branch on a shared argument, a callee, struct results (in registers
// and through a hidden sret pointer), a loop over memory that
// writes through per-lane pointers and reads a shared table, a local array, libm;
// and with derivatives (issue 25 items 1-2 together): batched gradients and second
// derivatives (__enzyme_batch of a function calling __enzyme_autodiff / __enzyme_fwddiff
// of one), and the gradient of a function that calls __enzyme_batch, against closed forms.
#include <math.h>
#include <stdio.h>

extern int enzyme_width, enzyme_vector, enzyme_scalar, enzyme_buffer;
typedef struct { double d[2]; } vec2;
typedef struct { double d[3]; } vec3;
typedef struct { double d[4]; } vec4;
extern double __enzyme_batch(void *, ...);
extern vec2 __enzyme_batch2(void *, ...);
extern vec3 __enzyme_batch3(void *, ...);
extern vec4 __enzyme_batch4(void *, ...);
extern void __enzyme_batchv(void *, ...);
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures = 0;

static void check(const char *what, int lane, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s lane %d: got %.15g want %.15g\n", ok ? "ok" : "FAIL", what, lane, got, want);
}

// ---------------------------------------------------------------- scalars
// a callee the batched code calls with per-lane arguments
__attribute__((noinline)) static double bump(double x, double a) { return x * a + sin(x); }

// `mode` is shared by the lanes, so the branch on it is taken by all of them
static double g(double x, double a, int mode) {
    double r = bump(x, a);
    if (mode > 0) r = r * r + exp(-x);
    return r - a;
}

static double g_closed(double x, double a, int mode) {
    double r = x * a + sin(x);
    return (mode > 0 ? r * r + exp(-x) : r) - a;
}

static void scalars(int mode) {
    double x[4] = {0.3, -1.2, 2.5, 0.75}, a = 1.5 + 0.25 * mode;
    double want[4];
    for (int k = 0; k < 4; k++) {
        want[k] = g(x[k], a, mode);
        check("g scalar call vs closed form", k, want[k], g_closed(x[k], a, mode), 1e-12);
    }
    double w1 = __enzyme_batch((void *)g, enzyme_width, 1, x[0], enzyme_scalar, a, enzyme_scalar, mode);
    check("g width 1", 0, w1, want[0], 1e-12);
    vec2 w2 = __enzyme_batch2((void *)g, enzyme_width, 2, x[0], x[1], enzyme_scalar, a, enzyme_scalar, mode);
    for (int k = 0; k < 2; k++) check("g width 2", k, w2.d[k], want[k], 1e-12);
    vec3 w3 = __enzyme_batch3((void *)g, enzyme_width, 3, enzyme_vector, x[0], x[1], x[2], enzyme_scalar, a,
                              enzyme_scalar, mode);
    for (int k = 0; k < 3; k++) check("g width 3", k, w3.d[k], want[k], 1e-12);
    vec4 w4 = __enzyme_batch4((void *)g, enzyme_width, 4, enzyme_vector, x[0], x[1], x[2], x[3], enzyme_scalar, a,
                              enzyme_scalar, mode);
    for (int k = 0; k < 4; k++) check("g width 4", k, w4.d[k], want[k], 1e-12);
    // a vector second argument too: each lane its own a
    double as[4] = {a, -a, 2 * a, 0.5};
    vec4 v4 = __enzyme_batch4((void *)g, enzyme_width, 4, x[0], x[1], x[2], x[3], as[0], as[1], as[2], as[3],
                              enzyme_scalar, mode);
    for (int k = 0; k < 4; k++) check("g width 4, vector a", k, v4.d[k], g_closed(x[k], as[k], mode), 1e-12);
}

// ---------------------------------------------------------------- memory
#define M 6

// Horner with a shared coefficient table, a local array, writes into per-lane memory;
// returns the sum of the outputs
static double poly_rows(const double *coef, int degree, double *x, double *out, int n) {
    double t[M];
    for (int i = 0; i < n; i++) {
        double p = 0;
        for (int j = degree; j >= 0; j--) p = p * x[i] + coef[j];
        t[i] = p;
    }
    double s = 0;
    for (int i = 0; i < n; i++) {
        out[i] = t[i] * x[i];
        x[i] = x[i] + 1;  // the input is updated in place, per lane
        s += out[i];
    }
    return s;
}

static double poly_closed(const double *coef, int degree, double x) {
    double p = 0, xp = 1;
    for (int j = 0; j <= degree; j++) { p += coef[j] * xp; xp *= x; }
    return p;
}

static void fill(double x[4][M], int n) {
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < n; i++) x[k][i] = 0.1 * i - 0.3 * k + 0.05;
}

static void check_rows(const char *what, int lanes, double x0[4][M], double x[4][M], double out[4][M],
                       const double *sums, const double *coef, int degree, int n) {
    for (int k = 0; k < lanes; k++) {
        double s = 0;
        for (int i = 0; i < n; i++) {
            double want = poly_closed(coef, degree, x0[k][i]) * x0[k][i];
            check(what, k, out[k][i], want, 1e-12);
            check(what, k, x[k][i], x0[k][i] + 1, 1e-12);
            s += want;
        }
        check(what, k, sums[k], s, 1e-12);
    }
}

static void memory(int n) {
    double coef[4] = {1.0, -0.5, 0.25, 2.0};
    double x0[4][M], x[4][M], out[4][M], sums[4];
    fill(x0, n);
    fill(x, n);
    for (int k = 0; k < 4; k++) sums[k] = poly_rows(coef, 3, x[k], out[k], n);  // N scalar calls
    check_rows("poly_rows scalar calls", 4, x0, x, out, sums, coef, 3, n);

    fill(x, n);
    sums[0] = __enzyme_batch((void *)poly_rows, enzyme_width, 1, enzyme_scalar, coef, enzyme_scalar, 3, x[0], out[0],
                             enzyme_scalar, n);
    check_rows("poly_rows width 1", 1, x0, x, out, sums, coef, 3, n);

    fill(x, n);
    vec2 s2 = __enzyme_batch2((void *)poly_rows, enzyme_width, 2, enzyme_scalar, coef, enzyme_scalar, 3, x[0], x[1],
                              out[0], out[1], enzyme_scalar, n);
    check_rows("poly_rows width 2", 2, x0, x, out, s2.d, coef, 3, n);

    fill(x, n);
    vec3 s3 = __enzyme_batch3((void *)poly_rows, enzyme_width, 3, enzyme_scalar, coef, enzyme_scalar, 3, x[0], x[1],
                              x[2], out[0], out[1], out[2], enzyme_scalar, n);
    check_rows("poly_rows width 3", 3, x0, x, out, s3.d, coef, 3, n);

    // enzyme_buffer: the lanes' rows are one array, sizeof(x[0]) bytes apart
    fill(x, n);
    vec4 s4 = __enzyme_batch4((void *)poly_rows, enzyme_width, 4, enzyme_scalar, coef, enzyme_scalar, 3,
                              enzyme_buffer, (long)sizeof(x[0]), x[0], enzyme_vector, out[0], out[1], out[2], out[3],
                              enzyme_scalar, n);
    check_rows("poly_rows width 4", 4, x0, x, out, s4.d, coef, 3, n);
}

// a void function: its only results are the writes through the lanes' pointers
static void normalize(double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i] * v[i];
    double r = 1 / sqrt(s);
    for (int i = 0; i < n; i++) v[i] *= r;
}

static void void_function(int n) {
    double v[3][M];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < n; i++) v[k][i] = 1.0 + i + 2.0 * k;
    __enzyme_batchv((void *)normalize, enzyme_width, 3, v[0], v[1], v[2], enzyme_scalar, n);
    for (int k = 0; k < 3; k++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += (1.0 + i + 2.0 * k) * (1.0 + i + 2.0 * k);
        for (int i = 0; i < n; i++) check("normalize width 3", k, v[k][i], (1.0 + i + 2.0 * k) / sqrt(s), 1e-12);
    }
}

// ---------------------------------------------------------------- struct results
typedef struct { double value, slope; } duo;      // returned in registers
typedef struct { double a, b, c; } tri;           // returned through a hidden pointer
typedef struct { duo lane[3]; } duo3;
typedef struct { tri lane[2]; } tri2;
extern duo3 __enzyme_batch_duo3(void *, ...);
extern tri2 __enzyme_batch_tri2(void *, ...);

static duo tangent_line(double x, double a) { duo r = {a * sin(x), a * cos(x)}; return r; }
static tri powers(double x) { tri r = {x, x * x, x * x * x}; return r; }

static void struct_results(void) {
    double x[3] = {0.2, -0.9, 1.7};
    duo3 d = __enzyme_batch_duo3((void *)tangent_line, enzyme_width, 3, x[0], x[1], x[2], enzyme_scalar, 1.5);
    for (int k = 0; k < 3; k++) {
        check("struct result, value", k, d.lane[k].value, 1.5 * sin(x[k]), 1e-15);
        check("struct result, slope", k, d.lane[k].slope, 1.5 * cos(x[k]), 1e-15);
    }
    tri2 t = __enzyme_batch_tri2((void *)powers, enzyme_width, 2, x[0], x[1]);
    for (int k = 0; k < 2; k++) {
        check("sret result", k, t.lane[k].a, x[k], 1e-15);
        check("sret result", k, t.lane[k].b, x[k] * x[k], 1e-15);
        check("sret result", k, t.lane[k].c, x[k] * x[k] * x[k], 1e-15);
    }
}

// ---------------------------------------------------------------- with derivatives
static double wave(double x) { return sin(x) * x * x; }
static double wave_d1(double x) { return cos(x) * x * x + 2 * x * sin(x); }
static double wave_d2(double x) { return -sin(x) * x * x + 4 * x * cos(x) + 2 * sin(x); }
static double grad_wave(double x) { return __enzyme_autodiff((void *)wave, x); }
static double hess_wave(double x) { return __enzyme_fwddiff((void *)grad_wave, x, 1.0); }
static double wave_pair(double x) {
    vec2 v = __enzyme_batch2((void *)wave, enzyme_width, 2, x, 2 * x);
    return v.d[0] + v.d[1];
}

static void derivatives(void) {
    double x[4] = {0.1, 0.7, -1.3, 2.2};
    vec4 g = __enzyme_batch4((void *)grad_wave, enzyme_width, 4, x[0], x[1], x[2], x[3]);
    vec4 h = __enzyme_batch4((void *)hess_wave, enzyme_width, 4, x[0], x[1], x[2], x[3]);
    for (int k = 0; k < 4; k++) {
        check("batched gradient", k, g.d[k], wave_d1(x[k]), 1e-12);
        check("batched second derivative", k, h.d[k], wave_d2(x[k]), 1e-12);
    }
    for (int k = 0; k < 4; k++)
        check("gradient of a batched call", k, __enzyme_autodiff((void *)wave_pair, x[k]),
              wave_d1(x[k]) + 2 * wave_d1(2 * x[k]), 1e-12);
}

int main(int argc, char **argv) {
    (void)argv;
    scalars(argc);      // mode 1: the branch taken
    scalars(argc - 1);  // mode 0: not taken
    memory(M - argc + 1);
    void_function(M - argc);
    derivatives();
    struct_results();
    if (failures) printf("%d FAILED\n", failures);
    return failures != 0;
}
