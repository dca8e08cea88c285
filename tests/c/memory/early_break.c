/* Loops leaving early on data: accumulate until a cap is crossed (break), return at the first negative entry, a while loop with a product condition; the derivative stops where the loop stopped. */
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

static double sum_until(const double *x, int n, double cap) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        s += x[i] * x[i];
        if (s > cap)
            break;
    }
    return s;
}

/* (k + 1) x_k^2 at the first negative x_k, 0 if none */
static double first_negative(const double *x, int n) {
    for (int i = 0; i < n; i++)
        if (x[i] < 0.0)
            return (i + 1) * x[i] * x[i];
    return 0.0;
}

/* p = prod (1 + x_i^2) while p < 10 */
static double while_prod(const double *x, int n) {
    double p = 1.0;
    int i = 0;
    while (i < n && p < 10.0) {
        p *= 1.0 + x[i] * x[i];
        i++;
    }
    return p;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 11; /* 12 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.8 + 0.3 * sin(1.7 * i);
        t[i] = 0.5 - 0.1 * i;
    }
    x[7] = -0.6;
    x[9] = -1.1;
    static const double caps[] = {2.05, 4.1, 100.0};
    for (int c = 0; c < 3; c++) {
        double cap = caps[c], s = 0.0;
        int stop = n - 1;
        for (int i = 0; i < n; i++) {
            s += x[i] * x[i];
            if (s > cap) { stop = i; break; }
        }
        for (int i = 0; i < n; i++) dx[i] = 0.0;
        __enzyme_autodiff((void *)sum_until, enzyme_dup, x, dx, n, enzyme_const, cap);
        double fwd = 0.0;
        for (int i = 0; i < n; i++) {
            double want = i <= stop ? 2.0 * x[i] : 0.0;
            check("sum_until dx", i, dx[i], want, TOL);
            fwd += want * t[i];
        }
        check("sum_until forward", cap, __enzyme_fwddiff((void *)sum_until, enzyme_dup, x, t, n, enzyme_const, cap), fwd, TOL);
    }

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)first_negative, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("first_negative dx", i, dx[i], i == 7 ? 2.0 * 8 * x[7] : 0.0, TOL);
    check("first_negative forward", n, __enzyme_fwddiff((void *)first_negative, enzyme_dup, x, t, n), 16.0 * x[7] * t[7], TOL);

    double p = 1.0;
    int stop = 0;
    while (stop < n && p < 10.0) { p *= 1.0 + x[stop] * x[stop]; stop++; }
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)while_prod, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int i = 0; i < n; i++) {
        double want = i < stop ? p * 2.0 * x[i] / (1.0 + x[i] * x[i]) : 0.0;
        check("while_prod dx", i, dx[i], want, TOL);
        fwd += want * t[i];
    }
    check("while_prod forward", n, __enzyme_fwddiff((void *)while_prod, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
