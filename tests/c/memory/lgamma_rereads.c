/* A Gaussian-mixture loop nest (ADBench's GMM shape: per point and component, x - mu into a
   scratch, Q times it with the strictly lower part packed column by column, a squared norm)
   in a function that also calls lgamma, as GMM's Wishart prior does. lgamma sets the C
   library's int signgam: a write no argument shows, which made every argument count as
   written, so that the reverse sweep taped L once per (point, component, entry) and x - mu
   twice per (point, component) instead of re-reading them. Doubles read through double
   accesses are never signgam (C's aliasing rule, clang's TBAA). Reverse against central
   differences, lgamma's own derivative included; built with -DCOUNT_TAPE (and
   ZYMASE_TAPE_STATS=1, tests/python/test_tape_bytes.py) it also bounds the bytes taped per
   (point, component): qx and exp(q) (2 D doubles) and a little bookkeeping, not D (D - 1) / 2
   more for L. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    if (!ok || at == 0)
        printf("%-4s %-28s [%2d] got %-24.17g want %-24.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { D = 5, K = 3, N = 4, TRI = D * (D - 1) / 2, NIN = K * (1 + 2 * D + TRI) };

/* in: alpha (K), mu (K D), q (K D), L (K TRI) */
static double mixture(const double *in, const double *x, int n, int k, int d) {
    const double *alpha = in, *mu = in + k, *q = mu + k * d, *L = q + k * d;
    double *xc = malloc(d * sizeof(double)), *qx = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++)
        for (int c = 0; c < k; c++) {
            for (int i = 0; i < d; i++)
                xc[i] = x[p * d + i] - mu[c * d + i];
            for (int i = 0; i < d; i++)
                qx[i] = exp(q[c * d + i]) * xc[i];
            int pos = c * (d * (d - 1) / 2);
            for (int i = 0; i < d; i++)
                for (int j = i + 1; j < d; j++)
                    qx[j] += L[pos++] * xc[i];
            double s = 0.0;
            for (int i = 0; i < d; i++)
                s += qx[i] * qx[i];
            total += alpha[c] - 0.5 * s;
        }
    /* a Gamma term of each component's weight (alpha > 0 here), after the loop nest */
    for (int c = 0; c < k; c++)
        total += lgamma(1.0 + alpha[c] * alpha[c]);
    free(xc);
    free(qx);
    return total;
}

#ifdef COUNT_TAPE
extern long __zymase_tape_bytes;

static long taped(double *in, double *din, const double *x, int n) {
    long before = __zymase_tape_bytes;
    __enzyme_autodiff((void *)mixture, enzyme_dup, in, din, enzyme_const, x, enzyme_const, n, enzyme_const, K,
                      enzyme_const, D);
    return __zymase_tape_bytes - before;
}
#endif

int main(void) {
    double in[NIN], din[NIN], x[N * D];
    for (int i = 0; i < NIN; i++)
        in[i] = 0.4 + 0.3 * sin(0.7 * i + 0.3);
    for (int i = 0; i < N * D; i++)
        x[i] = cos(1.1 * i);
    memset(din, 0, sizeof din);
    __enzyme_autodiff((void *)mixture, enzyme_dup, in, din, enzyme_const, x, enzyme_const, N, enzyme_const, K,
                      enzyme_const, D);
    const double h = 1e-6;
    for (int i = 0; i < NIN; i++) {
        double keep = in[i];
        in[i] = keep + h;
        double up = mixture(in, x, N, K, D);
        in[i] = keep - h;
        double down = mixture(in, x, N, K, D);
        in[i] = keep;
        check("d mixture", i, din[i], (up - down) / (2 * h), 1e-6);
    }
#ifdef COUNT_TAPE
    /* bytes per (point, component), from two runs: the per-call constant drops out */
    double per = (double)(taped(in, din, x, N) - taped(in, din, x, 1)) / ((N - 1) * K);
    double needed = 2 * D * 8; /* qx[i] for the squared norm and exp(q[i]) */
    int ok = per >= needed && per <= needed + 64; /* taping L would add TRI doubles, xc 2 D */
    failures += !ok;
    printf("%-4s bytes taped per (point, component): %g (needed %g, at most %g)\n", ok ? "ok" : "FAIL", per, needed,
           needed + 64);
#endif
    printf("%s\n", failures ? "FAILED" : "all ok");
    return failures != 0;
}
