// OpenMP (issue 27 item 1, performance of regions without restrict): a region whose
// arrays may alias gets a run-time check of their address ranges
// (autodiff/region_versioning.py). Apart, its reverse sweep recomputes it; overlapping,
// it keeps the taped split pair. Both paths are taken here by the same functions: a map
// called on the two halves of one buffer (recomputed) and in place (taped), a stencil
// called on two windows of one buffer that are apart, one of them ending exactly where
// the other's accessed range starts (recomputed), and a region with two outputs that
// may be one array (apart: recomputed; the same array: taped). Every derivative
// against the serial twin's and central finite differences, and the primal state after
// the gradient against the serial program's. Which path ran is seen in the bytes pushed on the tapes
// (__zymase_tape_bytes, present when built with ZYMASE_TAPE_STATS=1: optimized, the
// recomputed path tapes less than half of what the taped one does, checked at 1 thread);
// without it only the values are checked.
// Run with OMP_NUM_THREADS=1, 2, 4 (tests/test_c_openmp.py).
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
extern long __zymase_tape_bytes __attribute__((weak));

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    if (!ok || at % 97 == 0) printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { N = 700 };

void map(const double *x, double *out, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

static void map_ser(const double *x, double *out, int n) {
    for (int i = 0; i < n; i++) out[i] = sin(x[i]) * x[i] + exp(-0.5 * x[i]);
}

void stencil(const double *x, double *out, int n) {
#pragma omp parallel for
    for (int i = 1; i < n - 1; i++) out[i] = x[i] + 0.2 * (x[i - 1] - 2 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i + 1];
}

static void stencil_ser(const double *x, double *out, int n) {
    for (int i = 1; i < n - 1; i++) out[i] = x[i] + 0.2 * (x[i - 1] - 2 * x[i] + x[i + 1]) + 0.1 * x[i] * x[i + 1];
}

// two outputs that may be one array (a written/written pair): called on three windows
// of one buffer (recomputed) and with a == b (each iteration writes its element twice,
// the second value stays: taped)
void two_out(const double *x, double *a, double *b, int n) {
#pragma omp parallel for
    for (int i = 0; i < n; i++) {
        a[i] = cos(x[i]) * x[i];
        b[i] = x[i] * x[i] * x[i];
    }
}

static void two_out_ser(const double *x, double *a, double *b, int n) {
    for (int i = 0; i < n; i++) {
        a[i] = cos(x[i]) * x[i];
        b[i] = x[i] * x[i] * x[i];
    }
}

static double weight(int i) { return 1.0 + 0.01 * i; }

static double loss_two(const double *b0, int len, int ao, int bo, int n) {
    double b[3 * N], s = 0;
    for (int i = 0; i < len; i++) b[i] = b0[i];
    two_out(b, b + ao, b + bo, n);
    for (int i = 0; i < len; i++) s += weight(i) * b[i];
    return s;
}

// the gradient of two_out(buf, buf + ao, buf + bo, n), as run() below; returns the bytes taped
static long run_two(const char *name, const double *b0, int len, int ao, int bo, int n);

// the loss the gradients below differentiate: sum of weight(i) * buf[i] over the whole
// buffer after f(buf + xo, buf + oo, n), as a function of buf[k]
static double loss(void (*f)(const double *, double *, int), const double *b0, int len, int xo, int oo, int n) {
    double b[3 * N], s = 0;
    for (int i = 0; i < len; i++) b[i] = b0[i];
    f(b + xo, b + oo, n);
    for (int i = 0; i < len; i++) s += weight(i) * b[i];
    return s;
}

static long taped(void) { return &__zymase_tape_bytes ? __zymase_tape_bytes : -1; }

// the gradient of f(buf + xo, buf + oo, n) in one buffer (shadow dbuf: the same layout),
// against the serial twin and finite differences; returns the bytes taped (-1: unknown)
static long run(const char *name, void (*f)(const double *, double *, int), void (*ser)(const double *, double *, int),
                int grad_par, const double *b0, int len, int xo, int oo, int n) {
    double b[3 * N], db[3 * N], bs[3 * N], dbs[3 * N];
    for (int i = 0; i < len; i++) {
        b[i] = bs[i] = b0[i];
        db[i] = dbs[i] = weight(i);
    }
    long before = taped();
    if (grad_par == 0)
        __enzyme_autodiff((void *)map, enzyme_dup, b + xo, db + xo, enzyme_dup, b + oo, db + oo, enzyme_const, n);
    else
        __enzyme_autodiff((void *)stencil, enzyme_dup, b + xo, db + xo, enzyme_dup, b + oo, db + oo, enzyme_const, n);
    long bytes = before < 0 ? -1 : taped() - before;
    if (grad_par == 0)
        __enzyme_autodiff((void *)map_ser, enzyme_dup, bs + xo, dbs + xo, enzyme_dup, bs + oo, dbs + oo, enzyme_const, n);
    else
        __enzyme_autodiff((void *)stencil_ser, enzyme_dup, bs + xo, dbs + xo, enzyme_dup, bs + oo, dbs + oo,
                          enzyme_const, n);
    char what[96];
    double want[3 * N];
    for (int i = 0; i < len; i++) want[i] = b0[i];
    ser(want + xo, want + oo, n);
    for (int i = 0; i < len; i++) {
        snprintf(what, sizeof what, "%s primal after the gradient", name);
        check(what, i, b[i], want[i], 1e-15);
        snprintf(what, sizeof what, "%s reverse vs serial", name);
        check(what, i, db[i], dbs[i], 1e-12);
    }
    for (int i = 0; i < len; i += 23) {
        double h = 1e-6, up[3 * N], um[3 * N];
        for (int k = 0; k < len; k++) up[k] = um[k] = b0[k];
        up[i] += h;
        um[i] -= h;
        snprintf(what, sizeof what, "%s reverse vs finite difference", name);
        check(what, i, db[i], (loss(f, up, len, xo, oo, n) - loss(f, um, len, xo, oo, n)) / (2 * h), 1e-6);
    }
    return bytes;
}

static int team;

static long run_two(const char *name, const double *b0, int len, int ao, int bo, int n) {
    double b[3 * N], db[3 * N], bs[3 * N], dbs[3 * N], want[3 * N];
    for (int i = 0; i < len; i++) {
        b[i] = bs[i] = want[i] = b0[i];
        db[i] = dbs[i] = weight(i);
    }
    long before = taped();
    __enzyme_autodiff((void *)two_out, enzyme_dup, b, db, enzyme_dup, b + ao, db + ao, enzyme_dup, b + bo, db + bo,
                      enzyme_const, n);
    long bytes = before < 0 ? -1 : taped() - before;
    __enzyme_autodiff((void *)two_out_ser, enzyme_dup, bs, dbs, enzyme_dup, bs + ao, dbs + ao, enzyme_dup, bs + bo,
                      dbs + bo, enzyme_const, n);
    two_out_ser(want, want + ao, want + bo, n);
    char what[96];
    for (int i = 0; i < len; i++) {
        snprintf(what, sizeof what, "%s primal after the gradient", name);
        check(what, i, b[i], want[i], 1e-15);
        snprintf(what, sizeof what, "%s reverse vs serial", name);
        check(what, i, db[i], dbs[i], 1e-12);
    }
    for (int i = 0; i < len; i += 23) {
        double h = 1e-6, up[3 * N], um[3 * N];
        for (int k = 0; k < len; k++) up[k] = um[k] = b0[k];
        up[i] += h;
        um[i] -= h;
        snprintf(what, sizeof what, "%s reverse vs finite difference", name);
        check(what, i, db[i], (loss_two(up, len, ao, bo, n) - loss_two(um, len, ao, bo, n)) / (2 * h), 1e-6);
    }
    return bytes;
}

static void expect_less(const char *what, long recomputed, long taped_bytes) {
    // (built without ZYMASE_TAPE_STATS: no counter; with more than one thread, the
    // threads' pushes race on the one counter, and the path does not depend on the team;
    // at -O0 the recomputed region tapes about as much as the taped one: both paths are
    // still taken, the values are checked, the bytes tell them apart only when optimized)
#ifndef __OPTIMIZE__
    return;
#endif
    if (recomputed < 0 || taped_bytes < 0 || team != 1) return;
    int ok = 2 * recomputed < taped_bytes;
    if (!ok) failures++;
    printf("%s %s: %ld bytes taped recomputed, %ld taped\n", ok ? "ok" : "FAIL", what, recomputed, taped_bytes);
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 4 + argc;  // not a multiple of the team size
    double b0[3 * N];
    for (int i = 0; i < 3 * N; i++) b0[i] = 0.4 + 0.5 * sin(0.07 * i);
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    // the map: x and out the two halves of one buffer (apart: recomputed), then in place (taped)
    long apart = run("map apart", map, map_ser, 0, b0, 2 * n, 0, n, n);
    long inplace = run("map in place", map, map_ser, 0, b0, n, 0, 0, n);
    expect_less("map: the in-place call is taped, the other recomputed", apart, inplace);
    // the stencil: out right after x (adjacent, apart: recomputed), and out one element
    // before x's end (out[0] = x[n-1], which no iteration writes: the ranges the stencil
    // touches, x[0..n-1] and out[1..n-2], are still apart, exactly: recomputed). (A
    // stencil whose ranges overlap would race on the shared elements.)
    long adjacent = run("stencil adjacent", stencil, stencil_ser, 1, b0, 2 * n, 0, n, n);
    long edge = run("stencil touching", stencil, stencil_ser, 1, b0, 2 * n, 0, n - 1, n);
    expect_less("stencil: recomputed where the map in place is taped", adjacent, inplace);
    expect_less("stencil touching: recomputed", edge, inplace);
    // two outputs: x, a, b apart (recomputed), then a == b after x (taped)
    long three = run_two("two outputs apart", b0, 3 * n, n, 2 * n, n);
    long same = run_two("two outputs one array", b0, 2 * n, n, n, n);
    expect_less("two outputs: a == b is taped, apart recomputed", three, same);
    printf("%d failures\n", failures);
    return failures != 0;
}
