// Second order of a while loop whose trip count depends on x (its tape is a LIFO cache,
// one value per turn): with 40+ turns the inner derivative's tape outgrows the 128 bytes
// a cache keeps on the stack and moves to the heap. Reverse over reverse lost the
// adjoints of the values it moved (the byte-generic push copied them with a memcpy of
// unknown type): silently wrong Hessian entries. Now such tapes are typed
// (transforms/lower_tape.HEAP_CACHE_STRUCT). Against closed forms: with K turns,
// f = x0 x1^(K+1) (1 + 0.1 sin x2).
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;
static void check(const char *what, int i, int j, double got, double want) {
    int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s [%d][%d]: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, j, got, want);
}

static int turns;  // K, counted by the primal

static double f(const double *x, double bound) {
    double t = x[0];
    double s = 1.0 + 0.1 * sin(x[2]);
    int k = 0;
    while (t < bound) {
        t = t * x[1];
        k++;
    }
    turns = k;
    return t * x[1] * s;
}

// one component of the gradient, by reverse mode
static double grad_j(double *x, double bound, int j) {
    double xc[3] = {x[0], x[1], x[2]}, g[3] = {0, 0, 0};
    __enzyme_autodiff((void *)f, enzyme_dup, xc, g, enzyme_const, bound);
    return g[j];
}

static void hessian_closed_form(const double *x, int K, double H[3][3]) {
    double s = 1.0 + 0.1 * sin(x[2]), ds = 0.1 * cos(x[2]), dds = -0.1 * sin(x[2]);
    double p = pow(x[1], K + 1), dp = (K + 1) * pow(x[1], K), ddp = (K + 1) * K * pow(x[1], K - 1);
    double h[3][3] = {{0, dp * s, p * ds}, {dp * s, x[0] * ddp * s, x[0] * dp * ds}, {p * ds, x[0] * dp * ds, x[0] * p * dds}};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) H[i][j] = h[i][j];
}

int main(int argc, char **argv) {
    (void)argv;
    double bound = 3.0 + argc;  // 4: about 40 turns of x1 = 1.05 from 0.5
    double x[3] = {0.5, 1.05, 0.3}, H[3][3];
    f(x, bound);
    int K = turns;
    if (K < 32) { printf("FAIL: only %d turns\n", K); return 1; }
    hessian_closed_form(x, K, H);
    for (int j = 0; j < 3; j++) {
        double row[3] = {0, 0, 0};
        __enzyme_autodiff((void *)grad_j, enzyme_dup, x, row, enzyme_const, bound, enzyme_const, j);
        for (int i = 0; i < 3; i++) check("reverse over reverse", j, i, row[i], H[j][i]);
        for (int i = 0; i < 3; i++) {
            double t[3] = {i == 0, i == 1, i == 2};
            double got = __enzyme_fwddiff((void *)grad_j, enzyme_dup, x, t, enzyme_const, bound, enzyme_const, j);
            check("forward over reverse", j, i, got, H[j][i]);
        }
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
