/* Structs mixing ints and floats (struct sample { int label; float feat[3]; float weight; }) with a float model vector: a weighted least-squares loss, reverse into the float fields of the shadow structs and the model, forward with a float result. */
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

#define FTOL 1e-4

extern float __enzyme_fwddiff_f(void *, ...);

struct sample {
    int label;
    float feat[3];
    float weight;
};

/* sum_s weight_s (w . feat_s - label_s)^2 */
static float wls(const struct sample *s, int n, const float *w) {
    float loss = 0.0f;
    for (int k = 0; k < n; k++) {
        float r = -(float)s[k].label;
        for (int j = 0; j < 3; j++)
            r += w[j] * s[k].feat[j];
        loss += s[k].weight * r * r;
    }
    return loss;
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4; /* 5 samples */
    struct sample s[NMAX], ds[NMAX], ts[NMAX];
    float w[3] = {0.5f, -0.25f, 1.0f}, dw[3] = {0.0f, 0.0f, 0.0f}, tw[3] = {0.1f, 0.2f, -0.1f};
    double r[NMAX];
    for (int k = 0; k < n; k++) {
        s[k].label = k % 3 - 1;
        for (int j = 0; j < 3; j++) s[k].feat[j] = 0.25f * (float)((k + 2 * j) % 5) - 0.5f;
        s[k].weight = 1.0f + 0.25f * (float)k;
        ds[k].label = 99;
        for (int j = 0; j < 3; j++) ds[k].feat[j] = 0.0f;
        ds[k].weight = 0.0f;
        r[k] = -(double)s[k].label;
        for (int j = 0; j < 3; j++) r[k] += (double)w[j] * s[k].feat[j];
    }
    __enzyme_autodiff((void *)wls, enzyme_dup, s, ds, n, enzyme_dup, w, dw);
    double fwd = 0.0;
    for (int k = 0; k < n; k++) {
        check("wls d/dweight", k, ds[k].weight, r[k] * r[k], FTOL);
        for (int j = 0; j < 3; j++)
            check("wls d/dfeat", 3 * k + j, ds[k].feat[j], 2.0 * s[k].weight * r[k] * w[j], FTOL);
        check("shadow label untouched", k, ds[k].label, 99, 0.0);
    }
    for (int j = 0; j < 3; j++) {
        double want = 0.0;
        for (int k = 0; k < n; k++) want += 2.0 * s[k].weight * r[k] * s[k].feat[j];
        check("wls d/dw", j, dw[j], want, FTOL);
        fwd += want * tw[j];
    }
    /* forward: model tangent plus a tangent on every sample weight */
    for (int k = 0; k < n; k++) {
        ts[k] = s[k];
        for (int j = 0; j < 3; j++) ts[k].feat[j] = 0.0f;
        ts[k].weight = 0.5f;
        fwd += 0.5 * r[k] * r[k];
    }
    check("wls forward (float result)", n, __enzyme_fwddiff_f((void *)wls, enzyme_dup, s, ts, n, enzyme_dup, w, tw), fwd, FTOL);
    for (int j = 0; j < 3; j++) dw[j] = 0.0f;
    __enzyme_autodiff((void *)wls, enzyme_const, s, n, enzyme_dup, w, dw);
    for (int j = 0; j < 3; j++) {
        double want = 0.0;
        for (int k = 0; k < n; k++) want += 2.0 * s[k].weight * r[k] * s[k].feat[j];
        check("wls d/dw (samples const)", j, dw[j], want, FTOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
