/* Nested loops: a triangular double sum, a rising-factorial inner product, a loop nest with an inner early exit. */
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

/* sum_{i<n} sum_{j<i} sin(i x - j) */
static double triangle(double x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            s += sin(i * x - j);
    return s;
}
static double d_triangle(double x, int n) {
    double d = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            d += i * cos(i * x - j);
    return d;
}

/* sum_{i<n} prod_{j<=i, j<m} (x + j) / (i + 1) */
static double rising(double x, int n, int m) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double t = 1.0;
        for (int j = 0; j <= i && j < m; j++)
            t *= x + j;
        s += t / (i + 1);
    }
    return s;
}
/* product rule: d prod (x + j) = prod * sum 1 / (x + j) */
static double d_rising(double x, int n, int m) {
    double d = 0.0;
    for (int i = 0; i < n; i++) {
        double t = 1.0, inv = 0.0;
        for (int j = 0; j <= i && j < m; j++) {
            t *= x + j;
            inv += 1.0 / (x + j);
        }
        d += t * inv / (i + 1);
    }
    return d;
}

/* three levels, the innermost leaves early once its term is small */
static double nest3(double x, int n) {
    double s = 0.0;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++) {
            double t = x;
            for (int k = 1; k <= 20; k++) {
                t *= x / (i + j + k);
                if (fabs(t) < 1e-3)
                    break;
            }
            s += t;
        }
    return s;
}
/* by hand: t = x^(k+1) / prod(...) at the exit, so d t = (k + 1) t / x */
static double d_nest3(double x, int n) {
    double d = 0.0;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++) {
            double t = x;
            int k, steps = 0;
            for (k = 1; k <= 20; k++) {
                t *= x / (i + j + k);
                steps++;
                if (fabs(t) < 1e-3)
                    break;
            }
            d += (steps + 1) * t / x;
        }
    return d;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7, known only at run time */
    static const double xs[] = {-0.45, 0.35, 1.15, 2.6};
    for (unsigned i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        double x = xs[i];
        check("triangle reverse", x, __enzyme_autodiff((void *)triangle, x, n), d_triangle(x, n), TOL);
        check("triangle forward", x, __enzyme_fwddiff((void *)triangle, x, 1.0, n), d_triangle(x, n), TOL);
        for (int m = 1; m <= n; m += 3) {
            check("rising reverse", x, __enzyme_autodiff((void *)rising, x, n, m), d_rising(x, n, m), TOL);
            check("rising forward", x, __enzyme_fwddiff((void *)rising, x, 1.0, n, m), d_rising(x, n, m), TOL);
        }
        check("nest3 reverse", x, __enzyme_autodiff((void *)nest3, x, n), d_nest3(x, n), TOL);
        check("nest3 forward", x, __enzyme_fwddiff((void *)nest3, x, 1.0, n), d_nest3(x, n), TOL);
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
