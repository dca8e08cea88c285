/* Loops whose boundary iterations AD peels off (transforms/peel.py), so that the compares
   of the index are constants in the middle loop; each function is checked against central
   finite differences:
   - kpp:        Fisher-KPP by explicit Euler, zero-flux ends written as i > 0 ? u[i-1] : u[i]
                 and i < n-1 ? u[i+1] : u[i], two arrays swapped each step;
   - first_case: an i == 0 special case, and a sum that is used after the loop;
   - last_two:   a compare true only in the last two iterations (i >= n - 2);
   - countdown:  a loop counting down whose right neighbour is absent at the top end;
   - unsigned_i: an unsigned index compared with an unsigned bound;
   - two_each:   compares decided only two iterations from each end (i < 2, i >= n - 2);
                 they select values only, so the loop is not peeled (nothing to gain);
   - left_read_last_weight: i > 0 chooses an address (peeled: one first iteration), i == n - 1
                 only a value (not peeled for: the middle loop keeps its select).
   Reverse mode is checked entry by entry, forward mode along one direction.
   Sizes come from argc, so no trip count is a compile-time constant, and the smallest
   runs are shorter than the peeled iterations (the first copies leave early, or the
   middle loop is skipped and fewer last copies run). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-12s[%2d] got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got, want, tol);
}

__attribute__((noinline)) static double kpp(const double *p, const double *x, int n) {
    double *u = malloc(n * sizeof(double)), *v = malloc(n * sizeof(double));
    memcpy(u, x, n * sizeof(double));
    double inv_dx2 = (double)n * n, D = p[0], r = p[1];
    for (int s = 0; s < 7; s++) {
        for (int i = 0; i < n; i++) {
            double left = i > 0 ? u[i - 1] : u[i];
            double right = i < n - 1 ? u[i + 1] : u[i];
            double lap = (left - 2.0 * u[i] + right) * inv_dx2;
            v[i] = u[i] + 1e-3 * (D * lap + r * u[i] * (1.0 - u[i]));
        }
        double *t = u;
        u = v;
        v = t;
    }
    double total = 0.0;
    for (int i = 0; i < n; i++) total += (i + 1) * u[i];
    free(u);
    free(v);
    return total;
}

__attribute__((noinline)) static double first_case(const double *p, const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double l = i == 0 ? p[0] : x[i - 1];
        s += sin(l) * x[i] + p[1] * x[i] * x[i];
    }
    return s * s;
}

__attribute__((noinline)) static double last_two(const double *p, const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double w = i >= n - 2 ? p[0] : p[1];
        s += w * cos(x[i]) * x[i];
    }
    return s;
}

__attribute__((noinline)) static double countdown(const double *p, const double *x, int n) {
    double s = p[0];
    for (int i = n - 1; i >= 0; i--) {
        double right = i < n - 1 ? x[i + 1] : p[1];
        s = s * 0.9 + x[i] * right;
    }
    return s * s;
}

__attribute__((noinline)) static double unsigned_i(const double *p, const double *x, int n) {
    unsigned m = (unsigned)n;
    double s = 0.0;
    for (unsigned i = 0; i < m; i++) {
        double next = i + 1 < m ? x[i + 1] : p[0];
        s += exp(0.1 * x[i]) * next;
    }
    return s * p[1];
}

__attribute__((noinline)) static double two_each(const double *p, const double *x, int n) {
    double s = 0.0, p0 = p[0], p1 = p[1];
    for (int i = 0; i < n; i++) {
        double a = i < 2 ? p0 : 1.0, b = i >= n - 2 ? p1 : 1.0;
        s = 0.5 * s + a * b * sin(x[i]);
    }
    return s * s;
}

__attribute__((noinline)) static double left_read_last_weight(const double *p, const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double left = i > 0 ? x[i - 1] : x[i];
        double w = i == n - 1 ? 0.5 : 1.5;
        s += w * left * x[i] + p[0] * sin(x[i]) * p[1];
    }
    return s * s;
}

typedef double (*objective)(const double *, const double *, int);

static void gradient_check(const char *name, objective f, double *p, double *x, int n, double *vary, int count,
                           const double *grad) {
    const double h = 1e-6;
    for (int i = 0; i < count; i++) {
        double keep = vary[i];
        vary[i] = keep + h;
        double up = f(p, x, n);
        vary[i] = keep - h;
        double dn = f(p, x, n);
        vary[i] = keep;
        check(name, i, grad[i], (up - dn) / (2 * h), 1e-6);
    }
}

#define RUN(f, n)                                                                                            \
    do {                                                                                                     \
        double p[2] = {0.05, 2.0}, dp[2] = {0, 0};                                                           \
        double *x = malloc((n) * sizeof(double)), *dx = calloc((n), sizeof(double));                         \
        for (int i = 0; i < (n); i++) x[i] = 0.4 + 0.3 * sin(1.3 * i);                                       \
        __enzyme_autodiff((void *)f, enzyme_dup, p, dp, enzyme_dup, x, dx, enzyme_const, (int)(n));          \
        char xname[32];                                                                                      \
        snprintf(xname, sizeof xname, "%s.x", #f);                                                           \
        gradient_check(#f, f, p, x, (n), p, 2, dp);                                                          \
        gradient_check(xname, f, p, x, (n), x, (n), dx);                                                     \
        double tp[2] = {0.3, -0.2}, *tx = malloc((n) * sizeof(double));                                      \
        for (int i = 0; i < (n); i++) tx[i] = cos(0.9 * i);                                                  \
        double fwd = __enzyme_fwddiff((void *)f, enzyme_dup, p, tp, enzyme_dup, x, tx, enzyme_const, (int)(n)); \
        double want = 0.0;                                                                                   \
        for (int i = 0; i < 2; i++) want += tp[i] * dp[i];                                                   \
        for (int i = 0; i < (n); i++) want += tx[i] * dx[i];                                                 \
        check(#f " fwd", 0, fwd, want, 1e-9);                                                                \
        free(tx);                                                                                            \
        free(x), free(dx);                                                                                   \
    } while (0)

int main(int argc, char **argv) {
    (void)argv;
    int sizes[] = {1, 2, 3, 4, 5, 6 + argc}; /* below, at and above the peeled iterations */
    for (int k = 0; k < 6; k++) {
        int n = sizes[k];
        RUN(kpp, n);
        RUN(first_case, n);
        RUN(last_two, n);
        RUN(countdown, n);
        RUN(unsigned_i, n);
        RUN(two_each, n);
        RUN(left_read_last_weight, n);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
