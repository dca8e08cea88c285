/* Dot product of two double arrays: enzyme_dup / enzyme_const pointers, accumulation into shadows, aliased arguments, forward mode. */
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

static double dot(const double *x, const double *y, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8; /* 9, known only at run time */
    double x[NMAX], y[NMAX], dx[NMAX], dy[NMAX], tx[NMAX], ty[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 0.5 + 0.3 * i - 0.05 * i * i;
        y[i] = cos(1.3 * i) - 0.25;
        tx[i] = 0.1 * (i % 3) - 0.2;
        ty[i] = 1.0 / (1.0 + i);
    }

    /* reverse, both duplicated: dx += y, dy += x; the inputs are unchanged */
    for (int i = 0; i < n; i++) dx[i] = dy[i] = 0.0;
    __enzyme_autodiff((void *)dot, enzyme_dup, x, dx, enzyme_dup, y, dy, n);
    for (int i = 0; i < n; i++) {
        check("dot dx (dup, dup)", i, dx[i], y[i], TOL);
        check("dot dy (dup, dup)", i, dy[i], x[i], TOL);
    }

    /* reverse, y constant: no shadow for y */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)dot, enzyme_dup, x, dx, enzyme_const, y, n);
    for (int i = 0; i < n; i++)
        check("dot dx (dup, const)", i, dx[i], y[i], TOL);

    /* gradients are accumulated: a shadow holding 1 ends at 1 + y */
    for (int i = 0; i < n; i++) dx[i] = 1.0;
    __enzyme_autodiff((void *)dot, enzyme_dup, x, dx, enzyme_const, y, n);
    __enzyme_autodiff((void *)dot, enzyme_dup, x, dx, enzyme_const, y, n);
    for (int i = 0; i < n; i++)
        check("dot dx accumulated twice", i, dx[i], 1.0 + 2.0 * y[i], TOL);

    /* the same array passed twice with the same shadow: d(x.x)/dx = 2x */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)dot, enzyme_dup, x, dx, enzyme_dup, x, dx, n);
    for (int i = 0; i < n; i++)
        check("dot(x, x) dx aliased", i, dx[i], 2.0 * x[i], TOL);

    /* forward: the result is tx.y + x.ty; the tangents are not modified */
    double want = 0.0, want_x = 0.0, want_xx = 0.0;
    for (int i = 0; i < n; i++) {
        want += tx[i] * y[i] + x[i] * ty[i];
        want_x += x[i] * ty[i];
        want_xx += 2.0 * x[i] * tx[i];
    }
    check("dot forward (dup, dup)", n, __enzyme_fwddiff((void *)dot, enzyme_dup, x, tx, enzyme_dup, y, ty, n), want, TOL);
    check("dot forward (const, dup)", n, __enzyme_fwddiff((void *)dot, enzyme_const, x, enzyme_dup, y, ty, n), want_x, TOL);
    check("dot(x, x) forward aliased", n, __enzyme_fwddiff((void *)dot, enzyme_dup, x, tx, enzyme_dup, x, tx, n), want_xx, TOL);
    for (int i = 0; i < n; i++)
        check("forward leaves tangent tx", i, tx[i], 0.1 * (i % 3) - 0.2, TOL);

    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
