// Registered forward-mode derivatives (__enzyme_register_derivative_<name>), issue 24
// item 2: __enzyme_fwddiff calls the user's fwd(x, dx, ...) instead of differentiating
// the body, in a loop and from an inlined caller; a fwd returning {result, tangent}
// and one returning the tangent alone; a void function writing through a pointer whose
// fwd writes the shadow. The registered tangents are scaled by 3 to be recognizable.
#include <math.h>
#include <stdio.h>

extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-12 * (1 + fabs(want))) {
        printf("FAIL %s: got %.17g want %.17g\n", what, got, want);
        failures++;
    }
}

static int fwd_calls = 0;
double cube(double x) { return x * x * x; }
double cube_fwd(double x, double dx) { fwd_calls++; return 3 * 3 * x * x * dx; }  // 3x the true tangent
void *__enzyme_register_derivative_cube[2] = {(void *)cube, (void *)cube_fwd};

typedef struct { double value, tangent; } pair;
double sq(double x) { return x * x; }
pair sq_fwd(double x, double dx) { fwd_calls++; pair p = {x * x, 3 * 2 * x * dx}; return p; }
void *__enzyme_register_derivative_sq[2] = {(void *)sq, (void *)sq_fwd};

void scale(double *y, const double *x, double c) { *y = c * *x; }
void scale_fwd(double *y, double *dy, const double *x, const double *dx, double c, double dc) {
    fwd_calls++;
    *y = c * *x;
    *dy = 3 * (c * *dx + dc * *x);
}
void *__enzyme_register_derivative_scale[2] = {(void *)scale, (void *)scale_fwd};

double model(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += cube(x[i]) + sq(x[i]) * x[i];
    double y;
    scale(&y, &x[0], s);
    return y;
}

int main(void) {
    enum { N = 4 };
    double x[N] = {0.5, -1.5, 2.0, 0.75}, dx[N] = {1.0, 0.5, -0.25, 2.0};
    double t = __enzyme_fwddiff((void *)model, enzyme_dup, x, dx, enzyme_const, N);
    double s = 0, ds = 0;
    for (int i = 0; i < N; i++) {
        s += x[i] * x[i] * x[i] + x[i] * x[i] * x[i];
        ds += 3 * 3 * x[i] * x[i] * dx[i] + 3 * 2 * x[i] * dx[i] * x[i] + x[i] * x[i] * dx[i];
    }
    check("tangent", t, 3 * (s * dx[0] + ds * x[0]));
    check("fwd calls", fwd_calls, 2 * N + 1);
    check("direct", __enzyme_fwddiff((void *)cube, 2.0, 1.0), 3 * 12.0);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
