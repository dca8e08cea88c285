/* A struct with an int, a double and a pointer member to a double array: the shadow struct points at the shadow array; a reduction and an in-place scaling through the member, reverse and forward. */
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

struct series {
    int n;
    double scale;
    double *data;
};

/* scale * sum (i + 1) data_i^2 / n */
static double weighted(const struct series *s) {
    double acc = 0.0;
    for (int i = 0; i < s->n; i++)
        acc += (i + 1) * s->data[i] * s->data[i];
    return s->scale * acc / s->n;
}

/* data_i <- scale * data_i + data_{i-1} (in place, reading the updated neighbour) */
static void rescale(struct series *s) {
    for (int i = 0; i < s->n; i++)
        s->data[i] = s->scale * s->data[i] + (i > 0 ? s->data[i - 1] : 0.0);
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7 */
    double data[NMAX], ddata[NMAX], data0[NMAX], w[NMAX], y[NMAX];
    for (int i = 0; i < n; i++) data0[i] = data[i] = sin(0.9 * i) + 0.3;
    struct series s = {n, 1.75, data};
    struct series ds = {n, 0.0, ddata}; /* the shadow: same int, shadow double, shadow pointer */

    for (int i = 0; i < n; i++) ddata[i] = 0.0;
    __enzyme_autodiff((void *)weighted, enzyme_dup, &s, &ds);
    double acc = 0.0;
    for (int i = 0; i < n; i++) acc += (i + 1) * data[i] * data[i];
    check("weighted d/dscale", 0, ds.scale, acc / n, TOL);
    for (int i = 0; i < n; i++)
        check("weighted d/ddata", i, ddata[i], s.scale * 2.0 * (i + 1) * data[i] / n, TOL);
    double fwd = 0.5 * acc / n;
    for (int i = 0; i < n; i++) { ddata[i] = 0.1 * i; fwd += s.scale * 2.0 * (i + 1) * data[i] / n * ddata[i]; }
    ds.scale = 0.5;
    check("weighted forward", n, __enzyme_fwddiff((void *)weighted, enzyme_dup, &s, &ds), fwd, TOL);

    /* rescale: y_i = a d_i + y_{i-1}. Seeds w on y: lam_i = w_i + lam_{i+1}, d/dd_i = a lam_i, d/da = sum lam_i d_i */
    for (int i = 0; i < n; i++) { w[i] = 1.0 - 0.1 * i; ddata[i] = w[i]; }
    ds.scale = 0.0;
    __enzyme_autodiff((void *)rescale, enzyme_dup, &s, &ds);
    double lam = 0.0, dscale = 0.0;
    for (int i = n - 1; i >= 0; i--) {
        lam += w[i];
        check("rescale d/ddata", i, ddata[i], s.scale * lam, TOL);
        dscale += lam * data0[i];
    }
    check("rescale d/dscale", 0, ds.scale, dscale, TOL);
    for (int i = 0; i < n; i++) {
        y[i] = s.scale * data0[i] + (i > 0 ? y[i - 1] : 0.0);
        check("rescale primal", i, data[i], y[i], TOL);
    }

    /* forward: ty_i = ta d_i + a td_i + ty_{i-1} */
    for (int i = 0; i < n; i++) { data[i] = data0[i]; ddata[i] = cos(i); }
    ds.scale = -0.5;
    __enzyme_fwddiff((void *)rescale, enzyme_dup, &s, &ds);
    double ty = 0.0;
    for (int i = 0; i < n; i++) {
        ty = -0.5 * data0[i] + s.scale * cos(i) + ty;
        check("rescale forward", i, ddata[i], ty, TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
