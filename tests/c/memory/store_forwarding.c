/* Scratch arrays that one loop fills and later code reads. The reverse sweep rebuilds such a
   read from the expression the loop stored (autodiff/forwarding.py) when that is exact, and
   tapes it otherwise. Each function below is checked against central finite differences:
   - centered: xc filled by one loop, read by a loop over the same range and by a triangular loop;
   - rotate:   a stack array of three filled by a loop, read at constant indices (as in BA);
   - patched:  a second store changes one entry after the fill, so the fill is not the value read;
   - stale:    the read loop runs past the range the fill covered in this run, so its upper
               entries still hold what an earlier, longer run stored. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-10s[%2d] got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define N 5
#define D 4

__attribute__((noinline)) static double centered(const double *mu, const double *x, int n, int d) {
    double *xc = malloc(d * sizeof(double)), *qx = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < d; i++) xc[i] = x[p * d + i] - mu[i];
        for (int i = 0; i < d; i++) qx[i] = xc[i] * xc[i] * mu[i];
        for (int j = 0; j < d; j++)
            for (int i = j + 1; i < d; i++) qx[i] += sin(xc[j]) * mu[j];
        for (int i = 0; i < d; i++) total += qx[i] * qx[i];
    }
    free(xc);
    free(qx);
    return total;
}

__attribute__((noinline)) static double rotate(const double *cam, const double *pts, int n) {
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        double xo[3];
        for (int i = 0; i < 3; i++) xo[i] = pts[3 * p + i] - cam[i];
        total += xo[0] * xo[1] + xo[2] * xo[2] * cam[3] + xo[1] / (1.0 + xo[0] * xo[0]);
    }
    return total;
}

__attribute__((noinline)) static double patched(const double *mu, const double *x, int n, int d) {
    double *t = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < d; i++) t[i] = x[p * d + i] * mu[i];
        t[p % d] = mu[0] * mu[1];
        for (int i = 0; i < d; i++) total += t[i] * t[i] * x[p * d + i];
    }
    free(t);
    return total;
}

__attribute__((noinline)) static double stale(const double *mu, const double *x, int n, int d) {
    double *t = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        int m = d - p % d; /* all of t at p = 0, then t[m..d) keeps earlier points' values */
        int i = 0;
        do { /* runs at least once, so no guard hides which entries it wrote */
            t[i] = x[p * d + i] + mu[i];
            i++;
        } while (i < m);
        for (int j = 0; j < d; j++) total += t[j] * t[j] * mu[j];
    }
    free(t);
    return total;
}

typedef double (*objective)(const double *, const double *, int, int);


static double rotate4(const double *cam, const double *pts, int n, int d) {
    (void)d;
    return rotate(cam, pts, n);
}

/* checks grad[0..count) against central differences of f(a, b) in the entries of vary
   (which is a or b) */
static void gradient_check(const char *name, objective f, double *a, double *b, double *vary, int count,
                           const double *grad) {
    const double h = 1e-6;
    for (int i = 0; i < count; i++) {
        double keep = vary[i];
        vary[i] = keep + h;
        double up = f(a, b, N, D);
        vary[i] = keep - h;
        double dn = f(a, b, N, D);
        vary[i] = keep;
        check(name, i, grad[i], (up - dn) / (2 * h), 1e-6);
    }
}

int main(void) {
    double mu[D], x[N * D], cam[4], pts[3 * N];
    for (int i = 0; i < D; i++) mu[i] = 0.4 + 0.3 * sin(1.0 + i);
    for (int i = 0; i < N * D; i++) x[i] = sin(0.5 * i) + 0.1 * i;
    for (int i = 0; i < 4; i++) cam[i] = 0.2 * cos(1.0 + i);
    for (int i = 0; i < 3 * N; i++) pts[i] = 1.0 + 0.3 * sin(0.7 * i);

    double dmu[D] = {0}, dx[N * D] = {0};
    __enzyme_autodiff((void *)centered, enzyme_dup, mu, dmu, enzyme_dup, x, dx, enzyme_const, N, enzyme_const, D);
    gradient_check("centered", centered, mu, x, mu, D, dmu);
    gradient_check("centered.x", centered, mu, x, x, N * D, dx);

    double dcam[4] = {0}, dpts[3 * N] = {0};
    __enzyme_autodiff((void *)rotate, enzyme_dup, cam, dcam, enzyme_dup, pts, dpts, enzyme_const, N);
    gradient_check("rotate", rotate4, cam, pts, cam, 4, dcam);
    gradient_check("rotate.pts", rotate4, cam, pts, pts, 3 * N, dpts);

    double dmu2[D] = {0};
    __enzyme_autodiff((void *)patched, enzyme_dup, mu, dmu2, enzyme_const, x, enzyme_const, N, enzyme_const, D);
    gradient_check("patched", patched, mu, x, mu, D, dmu2);

    double dmu3[D] = {0};
    __enzyme_autodiff((void *)stale, enzyme_dup, mu, dmu3, enzyme_const, x, enzyme_const, N, enzyme_const, D);
    gradient_check("stale", stale, mu, x, mu, D, dmu3);

    printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures != 0;
}
