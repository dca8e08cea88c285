/* Arrays of structs holding floats, an int and a pointer, copied with memcpy/memmove of n * sizeof(S) (a run-time length): the pointers' shadows are copied and the adjoints moved element by element (refused before session 31); double and float fields, an overlapping memmove, a copy at a run-time offset from a noinline fill; reverse and forward. */
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
#define N 16

typedef struct { double a; int k; const double *p; double b; } S;
typedef struct { float a; int k; const double *p; float b; } SF;

/* s2 = copy of s1, shifted right by one with memmove (s2[0] stays s1[0]);
   f = sum_i a(j) (k(j) + 1) + b(j) * *p(j), j = max(i - 1, 0), a = x^2, b = 3x, p = &x[j + 2] */
static double shifted(const double *x, int n) {
    S *s1 = malloc(n * sizeof(S)), *s2 = malloc(n * sizeof(S));
    for (int i = 0; i < n; i++) {
        s1[i].a = x[i] * x[i];
        s1[i].k = i;
        s1[i].p = &x[(i + 2) % n];
        s1[i].b = 3.0 * x[i];
    }
    memcpy(s2, s1, n * sizeof(S));
    memmove(s2 + 1, s2, (n - 1) * sizeof(S));
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += s2[i].a * (s2[i].k + 1) + s2[i].b * *s2[i].p;
    free(s1);
    free(s2);
    return s;
}

/* the same with float fields (x exact in float: the products are exact) */
static double shifted_float(const double *x, int n) {
    SF *s1 = malloc(n * sizeof(SF)), *s2 = malloc(n * sizeof(SF));
    for (int i = 0; i < n; i++) {
        s1[i].a = (float)x[i] * (float)x[i];
        s1[i].k = i;
        s1[i].p = &x[(i + 2) % n];
        s1[i].b = 3.0f * (float)x[i];
    }
    memcpy(s2, s1, n * sizeof(SF));
    memmove(s2 + 1, s2, (n - 1) * sizeof(SF));
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += (double)s2[i].a * (s2[i].k + 1) + (double)s2[i].b * *s2[i].p;
    free(s1);
    free(s2);
    return s;
}

static void want_shifted(const double *x, int n, double *g) {
    for (int i = 0; i < n; i++)
        g[i] = 0.0;
    for (int i = 0; i < n; i++) {
        int j = i > 0 ? i - 1 : 0, q = (j + 2) % n;
        g[j] += 2.0 * x[j] * (j + 1) + 3.0 * x[q];
        g[q] += 3.0 * x[j];
    }
}

__attribute__((noinline)) static void fill(S *s, const double *x, int n) {
    for (int i = 0; i < n; i++) {
        s[i].a = x[i] * x[i];
        s[i].k = 1;
        s[i].p = &x[n - 1 - i];
        s[i].b = sin(x[i]);
    }
}

/* b = a rotated left by k = n / 3 with two copies at run-time offsets;
   f = sum_i a(j) * *p(j) * (i + 1) + b(j)^2, j = (i + k) % n, p(j) = &x[n - 1 - j] */
static double rotated(const double *x, int n) {
    S a[N], b[N];
    fill(a, x, n);
    int k = n / 3, m = n - k;
    memcpy(b, a + k, m * sizeof(S));
    memcpy(b + m, a, k * sizeof(S));
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += b[i].a * *b[i].p * (i + 1) + b[i].b * b[i].b;
    return s;
}

static void want_rotated(const double *x, int n, double *g) {
    for (int i = 0; i < n; i++)
        g[i] = 0.0;
    int k = n / 3;
    for (int i = 0; i < n; i++) {
        int j = (i + k) % n, q = n - 1 - j;
        g[j] += 2.0 * x[j] * x[q] * (i + 1) + 2.0 * sin(x[j]) * cos(x[j]);
        g[q] += x[j] * x[j] * (i + 1);
    }
}


#define CHECK(F, WANT, NAME)                                                                  \
    do {                                                                                      \
        double dx[N] = {0}, g[N], t[N];                                                       \
        __enzyme_autodiff((void *)F, enzyme_dup, x, dx, enzyme_const, n);                    \
        WANT(x, n, g);                                                                        \
        for (int i = 0; i < n; i++)                                                           \
            check(NAME " rev", i, dx[i], g[i], TOL);                                          \
        for (int i = 0; i < n; i++) {                                                         \
            for (int j = 0; j < n; j++)                                                       \
                t[j] = j == i;                                                                \
            check(NAME " fwd", i, __enzyme_fwddiff((void *)F, enzyme_dup, x, t, enzyme_const, n), g[i], TOL); \
        }                                                                                     \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    int n = 6 + argc;  /* 7 */
    double x[N];
    for (int i = 0; i < n; i++)
        x[i] = 0.25 * (i + 1) - (i % 2 ? 0.5 : 0.0);
    CHECK(shifted, want_shifted, "shifted");
    CHECK(shifted_float, want_shifted, "shifted float");
    CHECK(rotated, want_rotated, "rotated");
    printf("%d failures\n", failures);
    return failures != 0;
}
