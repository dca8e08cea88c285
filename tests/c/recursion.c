/* Recursion: x^n by linear and by binary recursion, a recursive exp series, a doubly recursive sequence. */
#include <stdio.h>
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

#define TOL 1e-9

static double pow_rec(double x, int n) {
    if (n == 0)
        return 1.0;
    return x * pow_rec(x, n - 1);
}

/* binary exponentiation, recursive */
double pow_fast(double x, int n) {
    if (n == 0)
        return 1.0;
    double h = pow_fast(x, n / 2);
    return n % 2 ? h * h * x : h * h;
}

/* 1 + x/k (1 + x/(k+1) (1 + ...)) = sum_{j=0..n} x^j / j! when called with k = 1 */
static double exp_rec(double x, int k, int n) {
    if (k > n)
        return 1.0;
    return 1.0 + x / k * exp_rec(x, k + 1, n);
}
static double exp_rec1(double x, int n) { return exp_rec(x, 1, n); }
/* d/dx sum_{j=0..n} x^j / j! = sum_{j=0..n-1} x^j / j! */
static double d_exp_rec1(double x, int n) {
    double s = 0.0, t = 1.0;
    for (int j = 0; j < n; j++) {
        s += t;
        t *= x / (j + 1);
    }
    return s;
}

/* f_0 = f_1 = x, f_n = f_{n-1} / 2 + sin(f_{n-2}) */
static double seq(double x, int n) {
    if (n < 2)
        return x;
    return 0.5 * seq(x, n - 1) + sin(seq(x, n - 2));
}
/* the derivative recurrence, iteratively: d_n = d_{n-1} / 2 + cos(f_{n-2}) d_{n-2} */
static double d_seq(double x, int n) {
    double f0 = x, f1 = x, d0 = 1.0, d1 = 1.0;
    for (int k = 2; k <= n; k++) {
        double f2 = 0.5 * f1 + sin(f0), d2 = 0.5 * d1 + cos(f0) * d0;
        f0 = f1; f1 = f2; d0 = d1; d1 = d2;
    }
    return d1;
}
static double central_difference(double x, int n) {
    double h = 1e-5;
    return (seq(x + h, n) - seq(x - h, n)) / (2.0 * h);
}

int main(int argc, char **argv) {
    (void)argv;
    int nmax = argc + 10; /* 11, known only at run time */
    static const double xs[] = {-1.3, 0.4, 0.9, 1.7};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        for (int n = 0; n <= nmax; n++) {
            double want = n == 0 ? 0.0 : n * pow(x, n - 1);
            check("pow_rec reverse", x, __enzyme_autodiff((void *)pow_rec, x, n), want, TOL);
            check("pow_rec forward", x, __enzyme_fwddiff((void *)pow_rec, x, 1.0, n), want, TOL);
            check("pow_fast reverse", x, __enzyme_autodiff((void *)pow_fast, x, n), want, TOL);
            check("pow_fast forward", x, __enzyme_fwddiff((void *)pow_fast, x, 1.0, n), want, TOL);
        }
        for (int n = 0; n <= nmax; n += 5) {
            check("exp_rec reverse", x, __enzyme_autodiff((void *)exp_rec1, x, n), d_exp_rec1(x, n), TOL);
            check("exp_rec forward", x, __enzyme_fwddiff((void *)exp_rec1, x, 1.0, n), d_exp_rec1(x, n), TOL);
            check("seq reverse", x, __enzyme_autodiff((void *)seq, x, n), d_seq(x, n), TOL);
            check("seq forward", x, __enzyme_fwddiff((void *)seq, x, 1.0, n), d_seq(x, n), TOL);
            check("seq reverse vs fd", x, __enzyme_autodiff((void *)seq, x, n), central_difference(x, n), 1e-6);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
