// OpenMP (issue 27 item 1, gradient speed): regions whose reverse sweep recomputes them
// instead of taping (autodiff/region_recompute.py), and the cases that must keep the
// taped (split) region. Recomputed: a map and a stencil over restrict arrays, each
// region only reading what nothing overwrites before the reverse sweep. Taped: the same
// map without restrict called in place (out == x), a region whose input the caller
// overwrites after it, and a region whose output the caller overwrites after it (the
// recomputation would write it back). Also recomputed: a region with two worksharing
// loops (one on a chunked schedule), a 'critical' sum into a local of the caller, and a
// reduction whose result is only returned (no primal region forked in the gradient).
// Taped too: a region whose values depend on omp_get_thread_num. Recomputed without the
// primal stores: a region whose output the caller reads after it (its forward sweep forked
// the primal), and one whose output is enzyme_dupnoneed. Every derivative against the serial twin's and
// central finite differences, and the primal results after the gradient call against
// the serial program's. Run with OMP_NUM_THREADS=1, 2, 4 (tests/test_c_openmp.py).
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    if (!ok || at % 97 == 0) printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { N = 700 };

void map_restrict(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

void stencil_restrict(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++) out[i] = x[i] + 0.2 * (x[i - 1] - 2 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i + 1];
}

// no restrict: called with out == x below, the region overwrites what it reads
void map_maybe_inplace(const double *x, double *out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

// the caller overwrites the region's input after it
void input_overwritten(double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = x[i] * x[i] * x[i];
    for (int i = 0; i < n; i++) x[i] = 0.5 * out[i];
}

// the caller overwrites the region's output after it
void output_overwritten(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = cos(x[i]) * x[i];
    for (int i = 0; i < n; i++) out[i] = out[i] * out[i] + x[i];
}

// one region, two worksharing loops (the barrier between them mirrored in the reverse):
// a stencil on a chunked static schedule (atomic adjoint adds throughout: a thread's
// iterations are not one chunk) and a map on the default schedule
void two_loops(const double *restrict x, double *restrict out, double *restrict out2, int n) {
#pragma omp parallel
    {
#pragma omp for schedule(static, 7)
        for (int i = 1; i < n - 1; i++) out[i] = x[i - 1] * x[i + 1] + sin(x[i]);
#pragma omp for
        for (int i = 0; i < n - 1; i++) out2[i] = x[i] * x[i + 1];
    }
}

static void two_loops_ser(const double *x, double *out, double *out2, int n) {
    for (int i = 1; i < n - 1; i++) out[i] = x[i - 1] * x[i + 1] + sin(x[i]);
    for (int i = 0; i < n - 1; i++) out2[i] = x[i] * x[i + 1];
}

// a 'critical' sum into a local of the caller, read after the region
double critical_sum(const double *restrict x, int n) {
    double s = 0;
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
        double v = sin(x[i]) * x[i];
#pragma omp critical
        s += v;
    }
    return s * s;
}

static double critical_sum_ser(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i];
    return s * s;
}

// a reduction whose result is only returned: the derivative forks no primal region, the
// recomputation in its reverse sweep is the only run
double returned_sum(const double *restrict x, int n) {
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i] + 0.5 * x[i] * x[i];
    return s;
}

static double returned_sum_ser(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i] + 0.5 * x[i] * x[i];
    return s;
}

// issue 27 item 1 (performance): recomputed regions whose primal stores the reverse
// fork leaves out (transforms/omp_dead_stores.py). The caller reads the region's output
// after it: its forward sweep forks the primal region, which fills out; the
// recomputation in the reverse sweep does not store it again.
double stencil_read_after(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++) out[i] = x[i - 1] * x[i + 1] + sin(x[i]);
    double s = 0;
    for (int i = 1; i < n - 1; i++) s += out[i] * out[i];
    return s;
}

static double stencil_read_after_ser(const double *x, double *out, int n) {
    for (int i = 1; i < n - 1; i++) out[i] = x[i - 1] * x[i + 1] + sin(x[i]);
    double s = 0;
    for (int i = 1; i < n - 1; i++) s += out[i] * out[i];
    return s;
}

// differentiated with enzyme_dupnoneed out: nobody reads out afterwards, so the only run
// of the region (its recomputation) need not store it
void stencil_unneeded(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++) out[i] = x[i - 1] * x[i + 1] + cos(x[i]);
}

static void stencil_unneeded_ser(const double *x, double *out, int n) {
    for (int i = 1; i < n - 1; i++) out[i] = x[i - 1] * x[i + 1] + cos(x[i]);
}

// a region whose values depend on the thread running each iteration: the reverse fork's
// team may differ from the forward one's, so it keeps the taped pair
void thread_scaled(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = x[i] * x[i] * (1.0 + omp_get_thread_num());
}

static void thread_scaled_r(double *x, double *out, int n) { thread_scaled(x, out, n); }

static void map_ser(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

static void stencil_ser(const double *x, double *out, int n) {
    for (int i = 1; i < n - 1; i++) out[i] = x[i] + 0.2 * (x[i - 1] - 2 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i + 1];
}

static void input_overwritten_ser(double *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = x[i] * x[i] * x[i];
    for (int i = 0; i < n; i++) x[i] = 0.5 * out[i];
}

static void output_overwritten_ser(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = cos(x[i]) * x[i];
    for (int i = 0; i < n; i++) out[i] = out[i] * out[i] + x[i];
}

static double weight(int i) { return 1.0 + 0.01 * i; }

// sum of w[i] * (out[i] + x[i]) after f(x, out), as a function of x[k]: what the
// reverse sweeps below differentiate (f may overwrite x)
static double loss(void (*f)(double *, double *, int), const double *x0, int n) {
    double x[N], out[N] = {0}, s = 0;
    for (int i = 0; i < n; i++) x[i] = x0[i];
    f(x, out, n);
    for (int i = 0; i < n; i++) s += weight(i) * (out[i] + x[i]);
    return s;
}

static void map_r(double *x, double *out, int n) { map_restrict(x, out, n); }
static void stencil_r(double *x, double *out, int n) { stencil_restrict(x, out, n); }
static void input_r(double *x, double *out, int n) { input_overwritten(x, out, n); }
static void output_r(double *x, double *out, int n) { output_overwritten(x, out, n); }

// the gradient of f (through Enzyme, a constant function at each call: a macro), the
// primal state it leaves, and both against the serial twin and finite differences
#define REVERSE(name, f, par, f_ser)                                                              \
    do {                                                                                         \
        double x[N], dx[N], out[N] = {0}, dout[N], xs[N], dxs[N], outs[N] = {0}, douts[N];        \
        for (int i = 0; i < n; i++) {                                                            \
            x[i] = xs[i] = x0[i];                                                                \
            dx[i] = dxs[i] = weight(i); /* the loss's own x term */                              \
            dout[i] = douts[i] = weight(i);                                                      \
        }                                                                                        \
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, out, dout, enzyme_const, n); \
        __enzyme_autodiff((void *)f_ser, enzyme_dup, xs, dxs, enzyme_dup, outs, douts,           \
                          enzyme_const, n);                                                      \
        compare(name, par, x, out, dx, dxs, x0, n);                                              \
    } while (0)

static void compare(const char *name, void (*par)(double *, double *, int), const double *x, const double *out,
                    const double *dx, const double *dxs, const double *x0, int n) {
    // the primal state after the gradient call is the program's, and so is the derivative
    double want_x[N], want_out[N] = {0};
    for (int i = 0; i < n; i++) want_x[i] = x0[i];
    par(want_x, want_out, n);
    char what[96];
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "%s primal out after the gradient", name);
        check(what, i, out[i], want_out[i], 1e-15);
        snprintf(what, sizeof what, "%s primal x after the gradient", name);
        check(what, i, x[i], want_x[i], 1e-15);
    }
    for (int i = 0; i < n; i++) {
        snprintf(what, sizeof what, "%s reverse vs serial", name);
        check(what, i, dx[i], dxs[i], 1e-12);
    }
    for (int i = 0; i < n; i += 23) {
        double h = 1e-6, up[N], um[N];
        for (int k = 0; k < n; k++) up[k] = um[k] = x0[k];
        up[i] += h;
        um[i] -= h;
        snprintf(what, sizeof what, "%s reverse vs finite difference", name);
        check(what, i, dx[i], (loss(par, up, n) - loss(par, um, n)) / (2 * h), 1e-6);
    }
}

static void inplace_map(double *x, int n) { map_maybe_inplace(x, x, n); }
static void inplace_ser(double *x, int n) { map_ser(x, x, n); }

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 4 + argc;  // not a multiple of the team size
    double x0[N];
    for (int i = 0; i < n; i++) x0[i] = 0.4 + 0.5 * sin(0.07 * i);
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    REVERSE("map", map_restrict, map_r, map_ser);
    REVERSE("stencil", stencil_restrict, stencil_r, stencil_ser);
    REVERSE("input overwritten", input_overwritten, input_r, input_overwritten_ser);
    REVERSE("output overwritten", output_overwritten, output_r, output_overwritten_ser);

    // in place through a function without restrict: out == x
    double x[N], dx[N], xs[N], dxs[N];
    for (int i = 0; i < n; i++) {
        x[i] = xs[i] = x0[i];
        dx[i] = dxs[i] = weight(i);
    }
    __enzyme_autodiff((void *)inplace_map, enzyme_dup, x, dx, enzyme_const, n);
    __enzyme_autodiff((void *)inplace_ser, enzyme_dup, xs, dxs, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        check("in place reverse vs serial", i, dx[i], dxs[i], 1e-12);
        check("in place primal after the gradient", i, x[i], xs[i], 1e-15);
    }
    // two loops in one region
    double out1[N] = {0}, dout1[N], out2[N] = {0}, dout2[N], outs1[N] = {0}, douts1[N], outs2[N] = {0}, douts2[N];
    for (int i = 0; i < n; i++) {
        x[i] = xs[i] = x0[i];
        dx[i] = dxs[i] = 0;
        dout1[i] = douts1[i] = weight(i);
        dout2[i] = douts2[i] = 1.0 / weight(i);
    }
    __enzyme_autodiff((void *)two_loops, enzyme_dup, x, dx, enzyme_dup, out1, dout1, enzyme_dup, out2, dout2,
                      enzyme_const, n);
    __enzyme_autodiff((void *)two_loops_ser, enzyme_dup, xs, dxs, enzyme_dup, outs1, douts1, enzyme_dup, outs2,
                      douts2, enzyme_const, n);
    for (int i = 0; i < n; i++) {
        check("two loops reverse vs serial", i, dx[i], dxs[i], 1e-12);
        check("two loops primal after the gradient", i, out1[i] + out2[i], outs1[i] + outs2[i], 1e-15);
    }

    // critical sum
    for (int i = 0; i < n; i++) dx[i] = dxs[i] = 0;
    __enzyme_autodiff((void *)critical_sum, enzyme_dup, x0, dx, enzyme_const, n);
    __enzyme_autodiff((void *)critical_sum_ser, enzyme_dup, x0, dxs, enzyme_const, n);
    for (int i = 0; i < n; i++) check("critical sum reverse vs serial", i, dx[i], dxs[i], 1e-10);
    for (int i = 0; i < n; i += 41) {
        double h = 1e-6, up[N], um[N];
        for (int k = 0; k < n; k++) up[k] = um[k] = x0[k];
        up[i] += h;
        um[i] -= h;
        // (of the serial twin: the threads' order of summation changes the parallel sum's
        // rounding from call to call, more than a difference quotient tolerates)
        check("critical sum reverse vs finite difference", i, dx[i],
              (critical_sum_ser(up, n) - critical_sum_ser(um, n)) / (2 * h), 1e-6);
    }
    // thread-dependent values, against finite differences of the parallel program
    {
        double out[N] = {0}, dout[N];
        for (int i = 0; i < n; i++) {
            x[i] = x0[i];
            dx[i] = weight(i);
            dout[i] = weight(i);
        }
        __enzyme_autodiff((void *)thread_scaled, enzyme_dup, x, dx, enzyme_dup, out, dout, enzyme_const, n);
        for (int i = 0; i < n; i += 23) {
            double h = 1e-6, up[N], um[N];
            for (int k = 0; k < n; k++) up[k] = um[k] = x0[k];
            up[i] += h;
            um[i] -= h;
            check("thread-dependent reverse vs finite difference", i, dx[i],
                  (loss(thread_scaled_r, up, n) - loss(thread_scaled_r, um, n)) / (2 * h), 1e-6);
        }
    }

    // the region's output read after it, and a dupnoneed output
    {
        double out[N] = {0}, dout[N] = {0}, outs[N] = {0}, douts[N] = {0};
        for (int i = 0; i < n; i++) dx[i] = dxs[i] = 0;
        __enzyme_autodiff((void *)stencil_read_after, enzyme_dup, x0, dx, enzyme_dup, out, dout, enzyme_const, n);
        __enzyme_autodiff((void *)stencil_read_after_ser, enzyme_dup, x0, dxs, enzyme_dup, outs, douts, enzyme_const,
                          n);
        for (int i = 0; i < n; i++) {
            check("output read after reverse vs serial", i, dx[i], dxs[i], 1e-12);
            check("output read after: primal out after the gradient", i, out[i], outs[i], 1e-15);
        }
        for (int i = 0; i < n; i += 41) {
            double h = 1e-6, up[N], um[N], o[N] = {0};
            for (int k = 0; k < n; k++) up[k] = um[k] = x0[k];
            up[i] += h;
            um[i] -= h;
            check("output read after reverse vs finite difference", i, dx[i],
                  (stencil_read_after_ser(up, o, n) - stencil_read_after_ser(um, o, n)) / (2 * h), 1e-6);
        }
        for (int i = 0; i < n; i++) {
            dx[i] = dxs[i] = 0;
            dout[i] = douts[i] = weight(i);
        }
        __enzyme_autodiff((void *)stencil_unneeded, enzyme_dup, x0, dx, enzyme_dupnoneed, out, dout, enzyme_const, n);
        __enzyme_autodiff((void *)stencil_unneeded_ser, enzyme_dup, x0, dxs, enzyme_dupnoneed, outs, douts,
                          enzyme_const, n);
        for (int i = 0; i < n; i++) check("dupnoneed output reverse vs serial", i, dx[i], dxs[i], 1e-12);
    }

    // returned sum
    for (int i = 0; i < n; i++) dx[i] = dxs[i] = 0;
    __enzyme_autodiff((void *)returned_sum, enzyme_dup, x0, dx, enzyme_const, n);
    __enzyme_autodiff((void *)returned_sum_ser, enzyme_dup, x0, dxs, enzyme_const, n);
    for (int i = 0; i < n; i++) check("returned sum reverse vs serial", i, dx[i], dxs[i], 1e-12);
    for (int i = 0; i < n; i += 41) {
        double h = 1e-6, up[N], um[N];
        for (int k = 0; k < n; k++) up[k] = um[k] = x0[k];
        up[i] += h;
        um[i] -= h;
        check("returned sum reverse vs finite difference", i, dx[i],
              (returned_sum_ser(up, n) - returned_sum_ser(um, n)) / (2 * h), 1e-6);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
