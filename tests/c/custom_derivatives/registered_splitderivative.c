// Registered split forward derivatives, issue 24 item 2 (split forward mode):
// __enzyme_register_splitderivative_g = {g, augment, fwdsplit}. Where g is called inside
// a function differentiated by __enzyme_augmentfwd / __enzyme_fwdsplit, the augmented
// pass calls the user's augment (never g), once per call, in a loop, and the tangent
// pass calls the user's fwdsplit with the tape that augment returned, once per call, in
// the same order (also from a caller that is inlined); neither g nor augment runs again. A function without a tape
// (augment returns the result alone) works too, and so does __enzyme_fwdsplit of the
// registered function itself. Checked against closed forms.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern int enzyme_dup, enzyme_const;
typedef struct { void *tape; double value; } augmented;
extern augmented __enzyme_augmentfwd(void *, ...);
extern double __enzyme_fwdsplit(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (!(fabs(got - want) <= 1e-12 * (1 + fabs(want)))) {
        printf("FAIL %s: got %.15g want %.15g\n", what, got, want);
        failures++;
    }
}

int g_calls, g_augment_calls, g_fwdsplit_calls;

// g(x) = x sin x, its tape the derivative g'(x) in a malloc'd cell
__attribute__((noinline)) double g(double x) {
    g_calls++;
    return x * sin(x);
}
typedef struct { double *tape; double value; } g_augmented;
g_augmented g_augment(double x) {
    g_augment_calls++;
    double *t = malloc(sizeof(double));
    *t = sin(x) + x * cos(x);
    g_augmented r = {t, x * sin(x)};
    return r;
}
double g_fwdsplit(double x, double dx, double *tape) {
    g_fwdsplit_calls++;
    (void)x;
    double d = *tape * dx;
    free(tape);
    return d;
}
void *__enzyme_register_splitderivative_g[3] = {(void *)g, (void *)g_augment, (void *)g_fwdsplit};

// h(x, k) = k x^2 without a tape: augment returns the result alone
int h_calls;
__attribute__((noinline)) double h(double x, int k) {
    h_calls++;
    return k * x * x;
}
double h_augment(double x, int k) { return k * x * x; }
double h_fwdsplit(double x, double dx, int k) { return 2 * k * x * dx; }
void *__enzyme_register_splitderivative_h[3] = {(void *)h, (void *)h_augment, (void *)h_fwdsplit};

// a caller of g that zymase inlines into f: g's calls stay registered calls
static double plus_g(const double *p) { return g(*p) + *p; }

// f(x) = sum_i (g(x[i]) + x[i]) * x[i] + h(x[i], i)
double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += plus_g(x + i) * x[i] + h(x[i], i);
    return s;
}

int main(void) {
    enum { N = 6 };
    double x[N], dx[N];
    for (int i = 0; i < N; i++) { x[i] = 0.3 + 0.4 * i; dx[i] = 1.0 - 0.25 * i; }
    double want = 0, dwant = 0;
    for (int i = 0; i < N; i++) {
        double xi = x[i];
        want += (xi * sin(xi) + xi) * xi + i * xi * xi;
        dwant += ((sin(xi) + xi * cos(xi) + 1) * xi + xi * sin(xi) + xi + 2 * i * xi) * dx[i];
    }
    augmented a = __enzyme_augmentfwd((void *)f, enzyme_dup, x, dx, enzyme_const, N);
    check("primal", a.value, want);
    if (g_calls != 0 || g_augment_calls != N || h_calls != 0) {
        printf("FAIL augmented pass: g %d, augment %d, h %d calls\n", g_calls, g_augment_calls, h_calls);
        failures++;
    }
    for (int i = 0; i < N; i++) x[i] = 1e6;  // clobbered
    double d = __enzyme_fwdsplit((void *)f, enzyme_dup, (double *)NULL, dx, enzyme_const, N, a.tape);
    check("tangent", d, dwant);
    if (g_calls != 0 || g_augment_calls != N || g_fwdsplit_calls != N || h_calls != 0) {
        printf("FAIL tangent pass: g %d, augment %d, fwdsplit %d, h %d calls\n", g_calls, g_augment_calls,
               g_fwdsplit_calls, h_calls);
        failures++;
    }

    // __enzyme_fwdsplit of the registered function itself: the user's pair, once each
    typedef struct { void *tape; double value; } g_direct;
    extern g_direct __enzyme_augmentfwd_g(void *, ...);
    g_direct ga = __enzyme_augmentfwd_g((void *)g, 0.7);
    check("g primal", ga.value, 0.7 * sin(0.7));
    double dg = __enzyme_fwdsplit((void *)g, 100.0, 2.0, ga.tape);  // the primal argument is not used
    check("g tangent", dg, 2.0 * (sin(0.7) + 0.7 * cos(0.7)));
    if (g_calls != 0 || g_augment_calls != N + 1 || g_fwdsplit_calls != N + 1) {
        printf("FAIL direct: g %d, augment %d, fwdsplit %d calls\n", g_calls, g_augment_calls, g_fwdsplit_calls);
        failures++;
    }
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
