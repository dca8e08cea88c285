// Third derivatives whose inner tapes come back from the tape pool larger than asked
// (session 25, issue 25): forward mode over a Hessian filled by forward-over-reverse
// calls, at sizes that change from call to call, so the pool hands a recycled block of
// an earlier, larger tape to a smaller one. Forward mode zeroes a grown shadow tape up to
// its malloc_usable_size; the third level mirrors that zeroing onto its own shadow of the
// second level's tape, which must therefore hold as many bytes as that tape's block, not
// just the bytes asked for (else the mirrored memset runs past it: glibc aborted with a
// corrupted heap). f is separable, so d/dx_k H[i][j] is phi'''(x_k) when i = j = k and 0
// otherwise; phi''' is checked against a central difference of the Hessian's diagonal.
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_dupnoneed;

enum { MAXN = 64 };

// phi(x) = z^2 + y with y = sin(sin(x) x) sin(x) x, z = cos(y) y: two float tapes of
// different lengths (y overwritten twice per element, z once)
static double f(const double *x, int n) {
    double y[MAXN], z[MAXN];
    for (int i = 0; i < n; i++) { y[i] = x[i]; z[i] = 1.0; }
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < n; i++) y[i] = sin(y[i]) * y[i];
    for (int i = 0; i < n; i++) z[i] = cos(z[i] * y[i]) * y[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += z[i] * z[i] + y[i];
    return s;
}
static void grad(const double *x, double *g, int n) {
    for (int i = 0; i < n; i++) g[i] = 0.0;
    __enzyme_autodiff((void *)f, enzyme_dup, x, g, enzyme_const, n);
}
// column j of the Hessian: forward over reverse along e_j
static void hessian(const double *x, double *h, int n) {
    for (int j = 0; j < n; j++) {
        double e[MAXN] = {0}, g[MAXN];
        e[j] = 1.0;
        __enzyme_fwddiff((void *)grad, enzyme_dup, x, e, enzyme_dupnoneed, g, h + j * n, enzyme_const, n);
    }
}

static int failures;
static void check(int n, int k, int i, int j, double got, double want, double tol) {
    if (!(fabs(got - want) <= tol * fmax(1.0, fabs(want)))) {
        printf("FAIL n=%d d/dx%d H[%d][%d] = %.17g want %.17g\n", n, k, i, j, got, want);
        failures++;
    }
}

int main(int argc, char **argv) {
    (void)argv;
    static double x[MAXN], dx[MAXN], h[MAXN * MAXN], dh[MAXN * MAXN], hp[MAXN * MAXN], hm[MAXN * MAXN];
    const int sizes[] = {40, 3, 17, 2, 64, 5, 9, 1};  // larger tapes before smaller ones
    const double step = 1e-5;
    for (int rep = 0; rep < 2 + argc; rep++)  // 3 rounds when run without arguments
        for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            int n = sizes[s], k = (rep + (int)s) % n;
            for (int i = 0; i < n; i++) { x[i] = 0.3 + 0.05 * i - 0.01 * rep; dx[i] = 0.0; }
            dx[k] = 1.0;
            __enzyme_fwddiff((void *)hessian, enzyme_dup, x, dx, enzyme_dupnoneed, h, dh, enzyme_const, n);
            double xk = x[k];
            x[k] = xk + step;
            hessian(x, hp, n);
            x[k] = xk - step;
            hessian(x, hm, n);
            x[k] = xk;
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++) {
                    int at = j * n + i;
                    if (i == j && j == k) check(n, k, i, j, dh[at], (hp[at] - hm[at]) / (2 * step), 1e-6);
                    else check(n, k, i, j, dh[at], 0.0, 1e-12);
                }
        }
    if (failures) printf("%d failures\n", failures);
    else printf("ok\n");
    return failures != 0;
}
