/* Loops whose iteration count the reverse sweep recomputes from their start and bound
   instead of taping it (a loop that leaves only through its counted test, steps by one and
   cannot wrap), next to loops where that is not allowed. Each function is checked against
   central finite differences:
   - triangular: the inner loop starts where the outer one is (GMM's Q x), with a running
                 pointer into the packed lower triangle; whether the inner loop ran is
                 rebuilt from the outer loop's branch, not recorded;
   - countdown:  int induction variables counting down to zero, inner bound from the outer;
   - unsigned_ne: an unsigned loop with a != test from a run-time start;
   - do_once:    a do-while whose start is at or past its bound in some runs (one pass);
   - early_exit: a counted loop that also breaks on the data (its count must be taped);
   - strided:    loops stepping by a run-time amount (a butterfly network's s += len, a
                 pointer moving by a row), whose induction variables are rebuilt from the
                 iteration number rather than taped.
   Sizes come from argc, so no trip count is a compile-time constant. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-12s[%2d] got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

__attribute__((noinline)) static double triangular(const double *low, const double *x, int n, int d) {
    double *out = malloc(d * sizeof(double));
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        for (int i = 0; i < d; i++) out[i] = x[p * d + i];
        const double *l = low;
        for (int j = 0; j < d; j++)
            for (int i = j + 1; i < d; i++) out[i] += *l++ * sin(x[p * d + j]);
        for (int i = 0; i < d; i++) total += out[i] * out[i];
    }
    free(out);
    return total;
}

__attribute__((noinline)) static double countdown(const double *a, const double *x, int n, int d) {
    double total = 0.0;
    for (int p = n - 1; p >= 0; p--) {
        double s = 1.0;
        for (int i = d - 1; i >= p % d; i--) s = s * a[i] + x[p * d + i];
        total += s * s;
    }
    return total;
}

__attribute__((noinline)) static double unsigned_ne(const double *a, const double *x, int n, int d) {
    double total = 0.0;
    for (unsigned p = 0; p != (unsigned)n; p++) {
        double s = 0.0;
        for (unsigned i = p % (unsigned)d; i != (unsigned)d; i++) s += a[i] * cos(x[p * d + i] * s);
        total += s * a[0];
    }
    return total;
}

__attribute__((noinline)) static double do_once(const double *a, const double *x, int n, int d) {
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        int i = p % 3 == 0 ? d : p % d; /* at the bound in every third run */
        double s = 0.5;
        do {
            s = s * a[i % d] + x[p * d + i % d];
            i++;
        } while (i < d);
        total += s * s;
    }
    return total;
}

__attribute__((noinline)) static double early_exit(const double *a, const double *x, int n, int d) {
    double total = 0.0;
    for (int p = 0; p < n; p++) {
        double s = 0.0;
        for (int i = 0; i < d; i++) {
            s += a[i] * x[p * d + i];
            if (s > 1.5) break; /* leaves after a data-dependent number of passes */
        }
        total += s * s;
    }
    return total;
}

__attribute__((noinline)) static double strided(const double *a, const double *x, int n, int d) {
    int m = n * d;
    double *y = malloc(m * sizeof(double));
    for (int i = 0; i < m; i++) y[i] = x[i];
    for (int len = 2; len <= m; len *= 2) {
        int half = len / 2;
        for (int k = 0; k < half; k++) {
            double w = a[k % d];
            for (int s = 0; s + k + half < m; s += len) {
                int i = s + k, j = i + half;
                double t = y[j] * w;
                y[j] = y[i] - t;
                y[i] = sin(y[i]) + t;
            }
        }
    }
    double total = 0.0;
    for (const double *row = y + 1; row < y + m; row += d) total += row[0] * row[0] * a[1];
    free(y);
    return total;
}

typedef double (*objective)(const double *, const double *, int, int);

/* checks grad[0..count) against central differences of f(a, x) in the entries of vary */
static void gradient_check(const char *name, objective f, double *a, double *x, int n, int d, double *vary,
                           int count, const double *grad) {
    const double h = 1e-6;
    for (int i = 0; i < count; i++) {
        double keep = vary[i];
        vary[i] = keep + h;
        double up = f(a, x, n, d);
        vary[i] = keep - h;
        double dn = f(a, x, n, d);
        vary[i] = keep;
        check(name, i, grad[i], (up - dn) / (2 * h), 1e-6);
    }
}

/* inputs for one function, its gradient, and the finite-difference checks of both */
struct problem {
    double *a, *x, *da, *dx;
    int n, d, na;
};

static struct problem setup(int n, int d, int na) {
    struct problem q = {malloc(na * sizeof(double)), malloc(n * d * sizeof(double)), calloc(na, sizeof(double)),
                        calloc(n * d, sizeof(double)), n, d, na};
    for (int i = 0; i < na; i++) q.a[i] = 0.3 + 0.2 * sin(1.0 + i);
    for (int i = 0; i < n * d; i++) q.x[i] = 0.5 * sin(0.7 * i) + 0.05 * i;
    return q;
}

static void verify(const char *name, objective f, struct problem q) {
    char xname[32];
    snprintf(xname, sizeof xname, "%s.x", name);
    gradient_check(name, f, q.a, q.x, q.n, q.d, q.a, q.na, q.da);
    gradient_check(xname, f, q.a, q.x, q.n, q.d, q.x, q.n * q.d, q.dx);
    free(q.a), free(q.x), free(q.da), free(q.dx);
}

/* __enzyme_autodiff needs the function itself, not a pointer passed around */
#define RUN(f, n, d, na)                                                                                    \
    do {                                                                                                    \
        struct problem q = setup(n, d, na);                                                                 \
        __enzyme_autodiff((void *)f, enzyme_dup, q.a, q.da, enzyme_dup, q.x, q.dx, enzyme_const, q.n,       \
                          enzyme_const, q.d);                                                               \
        verify(#f, f, q);                                                                                   \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    int n = 4 + argc, d = 4 + argc; /* 5 and 5 when run without arguments */
    RUN(triangular, n, d, d * (d - 1) / 2);
    RUN(countdown, n, d, d);
    RUN(unsigned_ne, n, d, d);
    RUN(do_once, n, d, d);
    RUN(early_exit, n, d, d);
    RUN(strided, n, d, d);
    printf("%d failures\n", failures);
    return failures != 0;
}
