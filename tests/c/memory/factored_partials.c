/* Two partials that are rounded sums multiplying the same adjoint, element by element:
   out[i] = w[i] (a[i] - C) + w[i] (b[i] + C) gives dw[i] = ((a[i] - C) + (b[i] + C)) dout[i],
   0 for a[i], b[i] < 128 and C = 2^60 (both sums round to -+C). The adjoint dout[i] differs
   from element to element, so it never folds to a constant; LLVM factored the two terms of the
   adjoint sum, p*d + q*d -> (p + q)*d, into a reassociable sum of the partials themselves,
   and then (a - C) + (b + C) into a + b: silently (a[i] + b[i]) dout[i] at -O1..-O3 before
   session 35 (autodiff/rounded_partials keeps such partials behind a fence). The same with a
   difference of the two terms, and a single rounded partial per element (no fence needed:
   its product with dout[i] is never an add LLVM can look into). */
#include <stdio.h>
#include <math.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-28s at %-4d got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got,
           want, tol);
}

#define TOL 1e-8
#define C 0x1p60
#define N 64
/* the rounding is the program's meaning: -ffast-math would reassociate the program itself */
#pragma float_control(precise, on, push)

static void sum_of_terms(const double *w, const double *a, const double *b, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (a[i] - C) + w[i] * (b[i] + C);
}
static void difference_of_terms(const double *w, const double *a, const double *b, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (a[i] + C) - w[i] * (b[i] + C);
}
/* dw[i] = ((a[i] - b[i]) + b[i]) dout[i]: one rounded partial, and b[i] */
static void one_rounded_term(const double *w, const double *a, const double *b, double *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = w[i] * (a[i] - b[i]) + w[i] * b[i];
}

#pragma float_control(pop)
#pragma float_control(precise, on, push)

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 4 + argc; /* not a compile-time constant */
    static double w[N], dw[N], a[N], b[N], big[N], out[N], dout[N];
    for (int i = 0; i < n; i++) {
        w[i] = 0.5 + i;
        a[i] = 1.0 + i % 7;
        b[i] = 2.5 + i % 5;
        big[i] = C * (1 + i % 2);
    }

    for (int i = 0; i < n; i++) {
        dw[i] = 0;
        dout[i] = 1.0 + 0.25 * i;
    }
    __enzyme_autodiff((void *)sum_of_terms, enzyme_dup, w, dw, enzyme_const, a, enzyme_const, b,
                      enzyme_dupnoneed, out, dout, n);
    for (int i = 0; i < n; i += 7)
        check("sum of terms dw", i, dw[i], ((a[i] - C) + (b[i] + C)) * (1.0 + 0.25 * i), TOL);

    for (int i = 0; i < n; i++) {
        dw[i] = 0;
        dout[i] = 1.0 + 0.25 * i;
    }
    __enzyme_autodiff((void *)difference_of_terms, enzyme_dup, w, dw, enzyme_const, a, enzyme_const, b,
                      enzyme_dupnoneed, out, dout, n);
    for (int i = 0; i < n; i += 7)
        check("difference of terms dw", i, dw[i], ((a[i] + C) - (b[i] + C)) * (1.0 + 0.25 * i), TOL);

    for (int i = 0; i < n; i++) {
        dw[i] = 0;
        dout[i] = 1.0 + 0.25 * i;
    }
    __enzyme_autodiff((void *)one_rounded_term, enzyme_dup, w, dw, enzyme_const, a, enzyme_const, big,
                      enzyme_dupnoneed, out, dout, n);
    for (int i = 0; i < n; i += 7)
        check("one rounded term dw", i, dw[i], ((a[i] - big[i]) + big[i]) * (1.0 + 0.25 * i), TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
#pragma float_control(pop)
