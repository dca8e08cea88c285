/* Third derivatives (reverse over reverse over reverse) of functions with while loops,
   whose tapes are LIFO caches: an integer power by repeated squaring and a counted
   product. The second derivative's tape holds pointers (the shadows the first one's
   realloc'd tape keeps for its reverse sweep), and a realloc of pointers lost their
   shadows in reverse mode: the third derivative wrote through null (session 31).
   Against closed forms. */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);

static int failures;

static void check(const char *what, double x, double got, double want) {
    int ok = fabs(got - want) <= 1e-11 * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%-4s %-24s at %-6g got %-24.17g want %.17g\n", ok ? "ok" : "FAIL", what, x, got, want);
}

static double ipow(double x, int n) {
    double r = 1.0;
    while (n) {
        if (n & 1) r *= x;
        x *= x;
        n >>= 1;
    }
    return r;
}

/* sum_{k=1..5} x^k y */
static double powers(double x, double y) {
    double s = 0.0;
    for (int k = 1; k <= 5; k++) s += ipow(x, k) * y;
    return s;
}
static double p1(double x, double y) { return __enzyme_autodiff((void *)powers, x, y); }
static double p2(double x, double y) { return __enzyme_autodiff((void *)p1, x, y); }
static double p3(double x, double y) { return __enzyme_autodiff((void *)p2, x, y); }

/* x^m by m multiplications, m unknown to the optimizer */
static int M;
static double product(double x) {
    double r = 1.0;
    int n = M;
    while (n) { r *= x; n--; }
    return r;
}
static double q1(double x) { return __enzyme_autodiff((void *)product, x); }
static double q2(double x) { return __enzyme_autodiff((void *)q1, x); }
static double q3(double x) { return __enzyme_autodiff((void *)q2, x); }

int main(int argc, char **argv) {
    (void)argv;
    M = 5 + argc; /* 6 */
    for (double x = -0.7; x < 1.5; x += 0.55) {
        double y = 1.3;
        check("powers d3/dx3", x, p3(x, y), (6 + 24 * x + 60 * x * x) * y);
        check("product d3/dx3", x, q3(x), M * (M - 1.0) * (M - 2.0) * pow(x, M - 3));
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
