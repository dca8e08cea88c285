/* A stack array the reverse sweep reads, followed by a call whose derivative keeps a local tape
   (issue 23, fuzz bugs B and D: seeds 5007 and 5023; the cause of item 1). When the forward sweep
   kept the primal's llvm.lifetime.end, the tape buffer of the inlined callee derivative could take
   the array's stack slot (stack coloring) and clear it before the reverse sweep read the array:
   silently wrong gradients (the array's contributions became 0), forward mode right.
   - pairs_then_helper: an array of structs { double a, b; int k; } read back in a reduction, then
     a noinline helper with a branch (its derivative tapes atan(t)); wrong at -O1..-O3.
   - copied_then_recursion: a stack array filled by memcpy, one entry deciding an fmax in a while
     loop, then a recursive helper (its derivative tapes the recursion); wrong at -O1. */
#include <stdio.h>
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
#define NMAX 8

struct pair {
    double a;
    double b;
    int k;
};

/* t = exp(-b^2), times atan(t) when a > b */
__attribute__((noinline)) static double bump(double a, double b) {
    double t = exp(-(b * b));
    if (a > b)
        t = t * atan(t);
    return t;
}

/* sum_i x_i cos(x_i) + bump(x_1, x_0 / 4) */
double pairs_then_helper(const double *x, int n) {
    struct pair ps[NMAX];
    for (int i = 0; i < n; i++) {
        ps[i].a = x[i];
        ps[i].b = cos(x[i]);
        ps[i].k = i % 3;
    }
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += ps[i].a * ps[i].b;
    return s + bump(x[1], 0.25 * x[0]);
}

/* d bump(a, b) / db (a and b away from a == b) */
static double bump_db(double a, double b) {
    double t = exp(-(b * b)), dt = -2.0 * b * t;
    return a > b ? (atan(t) + t / (1.0 + t * t)) * dt : dt;
}

/* 0.5 rec(0.5, d - 1) + tanh(atan(2 v)) */
static double rec(double v, int d) {
    if (d <= 0)
        return 0.5;
    return 0.5 * rec(0.5, d - 1) + tanh(atan(2.0 * v));
}

/* t = tanh(sqrt(0.5 + w3^2)) grows by 0.4 + 0.4 fmax(0.5, 0.5 - w2) until t >= 2.5;
   plus rec(log(1 + w1^2), 2); w is a stack copy of x */
double copied_then_recursion(const double *x, int n) {
    double w[NMAX];
    memcpy(w, x, (size_t)n * sizeof(double));
    double t = tanh(sqrt(0.5 + w[3] * w[3]));
    while (t < 2.5)
        t += 0.4 + 0.4 * fmax(0.5, 0.5 - w[2]);
    return t + rec(log(1.0 + w[1] * w[1]), 2);
}

/* the gradient of copied_then_recursion, from the iteration count of its while loop */
static void copied_then_recursion_grad(const double *x, int n, double *g) {
    for (int i = 0; i < n; i++)
        g[i] = 0.0;
    double u = sqrt(0.5 + x[3] * x[3]), t = tanh(u);
    int iterations = 0;
    while (t < 2.5) {
        t += 0.4 + 0.4 * fmax(0.5, 0.5 - x[2]);
        iterations++;
    }
    double th = tanh(u);
    g[3] = (1.0 - th * th) * x[3] / u;
    g[2] = 0.5 - x[2] > 0.5 ? -0.4 * iterations : 0.0;
    double v = log(1.0 + x[1] * x[1]), r = tanh(atan(2.0 * v));
    g[1] = (1.0 - r * r) * 2.0 / (1.0 + 4.0 * v * v) * 2.0 * x[1] / (1.0 + x[1] * x[1]);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4; /* 5 */
    /* points away from x_1 == x_0 / 4, from 0.5 - x_2 == 0.5 and from t landing on 2.5 */
    static const double points[3][NMAX] = {
        {0.413712, -1.137111, -0.456846, -0.383202, -1.001345},
        {-0.677776, 0.605900, 0.362208, 0.576128, 1.296194},
        {1.060399, -1.267457, -1.038796, 0.609130, -0.313651},
    };
    double x[NMAX], dx[NMAX], tx[NMAX], g[NMAX];
    for (int p = 0; p < 3; p++) {
        for (int i = 0; i < n; i++) {
            x[i] = points[p][i];
            dx[i] = 0.0;
        }
        __enzyme_autodiff((void *)pairs_then_helper, enzyme_dup, x, dx, n);
        for (int i = 0; i < n; i++)
            g[i] = cos(x[i]) - x[i] * sin(x[i]);
        g[0] += 0.25 * bump_db(x[1], 0.25 * x[0]);
        for (int i = 0; i < n; i++) {
            check("pairs_then_helper dx", p * 10 + i, dx[i], g[i], TOL);
            for (int j = 0; j < n; j++)
                tx[j] = j == i ? 1.0 : 0.0;
            check("pairs_then_helper forward", p * 10 + i,
                  __enzyme_fwddiff((void *)pairs_then_helper, enzyme_dup, x, tx, n), g[i], TOL);
        }

        for (int i = 0; i < n; i++)
            dx[i] = 0.0;
        __enzyme_autodiff((void *)copied_then_recursion, enzyme_dup, x, dx, n);
        copied_then_recursion_grad(x, n, g);
        for (int i = 0; i < n; i++) {
            check("copied_then_recursion dx", p * 10 + i, dx[i], g[i], TOL);
            for (int j = 0; j < n; j++)
                tx[j] = j == i ? 1.0 : 0.0;
            check("copied_then_recursion forward", p * 10 + i,
                  __enzyme_fwddiff((void *)copied_then_recursion, enzyme_dup, x, tx, n), g[i], TOL);
        }
    }
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
