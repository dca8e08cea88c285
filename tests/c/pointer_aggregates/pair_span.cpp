// C++ aggregates of pointers to active memory returned by value (issue: silent wrong
// derivatives, item 1): a std::pair<double *, double *> of two halves of an array, a
// std::span written and read through, a span chosen by a ternary and a span passed by
// value to a second function. Built with -std=c++20 (std::span). Reverse and forward
// mode against closed forms.
#include <cmath>
#include <cstdio>
#include <span>
#include <utility>

extern "C" {
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
}

static int failures;

// Passes when |got - want| <= tol * max(1, |want|); a NaN never passes.
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = std::fabs(want) > 1.0 ? std::fabs(want) : 1.0;
    bool ok = std::fabs(got - want) <= tol * scale;
    failures += !ok;
    std::printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n", ok ? "ok" : "FAIL", what, at, got,
                want, tol);
}

constexpr double TOL = 1e-9;
constexpr int N = 4;

__attribute__((noinline)) static std::pair<double *, double *> halves(double *x, long n) { return {x, x + n / 2}; }
__attribute__((noinline)) static std::span<double> span_of(double *x, long n) { return {x, size_t(n)}; }
__attribute__((noinline)) static double sum_cubes(std::span<double> s) {
    double t = 0.0;
    for (double v : s) t += v * v * v;
    return t;
}

// sum_i x_i x_{i + n/2} over the first half
static double pair_of_halves(double *x, long n) {
    auto [lo, hi] = halves(x, n);
    double s = 0.0;
    for (long i = 0; i < n / 2; i++) s += lo[i] * hi[i];
    return s;
}

// y_i = x_i^2 through spans; returns sum y_i x_i = sum x_i^3
static double spans_written(double *x, double *y, long n) {
    std::span<double> sx = span_of(x, n), sy = span_of(y, n);
    for (size_t i = 0; i < sy.size(); i++) sy[i] = sx[i] * sx[i];
    double s = 0.0;
    for (size_t i = 0; i < sy.size(); i++) s += sy[i] * sx[i];
    return s;
}

// c ? sum x_i^3 : sum y_i^3, the chosen span passed by value
static double chosen_span(double *x, double *y, long n, int c) {
    std::span<double> a = span_of(x, n), b = span_of(y, n);
    return sum_cubes(c ? a : b);
}

static void zero(double *v) {
    for (int i = 0; i < N; i++) v[i] = 0.0;
}

int main(int argc, char **) {
    long n = 3 + argc;  // N, not a compile-time constant
    int c = argc > 0;
    double x[N] = {0.5, 1.5, -2.0, 0.75}, y[N] = {0.25, -1.0, 2.0, -0.5};
    double dx[N], dy[N], w[N], dw[N];
    double tx[N] = {1.0, 1.0, 1.0, 1.0}, ty[N] = {1.0, -1.0, 0.5, 2.0};

    zero(dx);
    __enzyme_autodiff((void *)pair_of_halves, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < N; i++) check("pair_of_halves reverse", x[i], dx[i], x[(i + N / 2) % N], TOL);
    check("pair_of_halves forward", 0, __enzyme_fwddiff((void *)pair_of_halves, enzyme_dup, x, ty, enzyme_const, n),
          ty[0] * x[2] + x[0] * ty[2] + ty[1] * x[3] + x[1] * ty[3], TOL);

    zero(dx), zero(w), zero(dw);
    __enzyme_autodiff((void *)spans_written, enzyme_dup, x, dx, enzyme_dup, w, dw, enzyme_const, n);
    for (int i = 0; i < N; i++) check("spans_written reverse", x[i], dx[i], 3 * x[i] * x[i], TOL);
    zero(dw);
    double want = 0.0;
    for (int i = 0; i < N; i++) want += 3 * x[i] * x[i] * tx[i];
    check("spans_written forward", 0, __enzyme_fwddiff((void *)spans_written, enzyme_dup, x, tx, enzyme_dup, w, dw,
                                                        enzyme_const, n), want, TOL);
    for (int i = 0; i < N; i++) check("spans_written forward y", x[i], dw[i], 2 * x[i], TOL);

    zero(dx), zero(dy);
    __enzyme_autodiff((void *)chosen_span, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, n, enzyme_const, c);
    for (int i = 0; i < N; i++) {
        check("chosen_span reverse x", x[i], dx[i], 3 * x[i] * x[i], TOL);
        check("chosen_span reverse y", y[i], dy[i], 0.0, TOL);
    }
    want = 0.0;
    for (int i = 0; i < N; i++) want += 3 * y[i] * y[i] * ty[i];
    check("chosen_span forward", 0, __enzyme_fwddiff((void *)chosen_span, enzyme_dup, x, tx, enzyme_dup, y, ty,
                                                      enzyme_const, n, enzyme_const, 0), want, TOL);

    std::printf("%d failures\n", failures);
    return failures != 0;
}
