/* The timing harness bench/vs_enzyme.py wraps around each program, identical in every
   build: zymase cc, plain clang (gradient stubbed) and Enzyme's own pipeline inside
   Enzyme-JAX's cpp_call. It compiles as C and as C++ (cpp_call compiles C++ only), times
   the primal and the gradient call by call with clock_gettime inside the compiled code (no
   process start-up, no XLA dispatch in the timings), and checks nothing itself: the
   script compares the gradients it returns.

   A program includes this header and defines, all static:
     void  *vs_init(int n, const double *x)   state holding a copy of the inputs x[0..n)
     void   vs_primal(void *s)                one call of the primal
     void   vs_grad(void *s, double *g)       the gradient of vs_objective w.r.t. x into g
     double vs_objective(void *s)             the scalar the gradient differentiates
   The driver (vs_main.c, or the C++ entry vs_enzyme.py generates) calls vs_time.

   Memory layout is the harness's, the same in every build: a program takes its arrays from
   vs_alloc (freed by vs_time), each on its own page at a fixed offset, and the gradient is
   computed into a harness buffer and copied out. Otherwise each build's arrays land where its
   allocator and caller put them (malloc's heap in an executable, XLA's 64-byte-aligned
   buffers in Enzyme-JAX), and where the arrays of a streaming loop fall relative to each
   other modulo 4 KiB (the L1 cache's aliasing of loads with earlier stores) moved the
   normalization gradient by up to 6%, more than the differences measured. */
#ifndef VS_HARNESS_H
#define VS_HARNESS_H
#ifndef __cplusplus
#define _POSIX_C_SOURCE 199309L
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __cplusplus
#define VS_RESTRICT __restrict__
extern "C" {
#else
#define VS_RESTRICT restrict
#endif
#ifdef VS_STUB
/* the primal-only builds: the marker goes to an opaque function defined in another object
   (clang) or shared library (Enzyme-JAX), as bench/primal_parity.py stubs it, so no AD
   tool sees it and the optimizer knows nothing of what it does; never called */
#define __enzyme_autodiff vs_enzyme_stub
#endif
extern int enzyme_dup, enzyme_const;
double __enzyme_autodiff(void *, ...);
#ifdef __cplusplus
}
#endif

/* Allocation k starts VS_STAGGER * k bytes (modulo a page) past a page boundary: arrays
   streamed together do not share their offset within a page unless VS_STAGGER is 0 */
#ifndef VS_STAGGER
#define VS_STAGGER 256
#endif
#define VS_MAX_ALLOCS 32
static void *vs_blocks[VS_MAX_ALLOCS];
static int vs_nblocks;

static void *vs_alloc(size_t bytes) {
    if (vs_nblocks == VS_MAX_ALLOCS) abort();
    size_t offset = ((size_t)VS_STAGGER * (size_t)vs_nblocks) % 4096;
    size_t total = (bytes + offset + 4095) / 4096 * 4096;
    unsigned char *block = (unsigned char *)aligned_alloc(4096, total);
    if (!block) abort();
    vs_blocks[vs_nblocks++] = block;
    return block + offset;
}

static void vs_free_all(void) {
    while (vs_nblocks) free(vs_blocks[--vs_nblocks]);
}

static double vs_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* An optimization barrier around each timed call: the state may have been read and changed
   by anything, so no work of one call (mag of an unchanged x, say) is hoisted out of the
   loop of calls, which an optimizer seeing the whole harness otherwise may do. */
static inline void vs_clobber(void *s) { __asm__ volatile("" : : "r"(s) : "memory"); }

static void *vs_init(int n, const double *x);
static void vs_primal(void *s);
static void vs_grad(void *s, double *g);
static double vs_objective(void *s);

/* times[0..reps) the primal calls, times[reps..2 reps) the gradient calls (when grad is
   nonzero); g the gradient of the last call; out[0] the objective at x. */
static void vs_time(int n, int reps, int grad, const double *x, double *g_out, double *times,
                    double *out) {
    double *g = (double *)vs_alloc(sizeof(double) * (size_t)n);
    void *s = vs_init(n, x);
    out[0] = vs_objective(s);
    for (int r = 0; r < reps; r++) {
        vs_clobber(s);
        double t0 = vs_now();
        vs_primal(s);
        times[r] = vs_now() - t0;
    }
    for (int r = 0; grad && r < reps; r++) {
        vs_clobber(s);
        vs_clobber(g);
        double t0 = vs_now();
        vs_grad(s, g);
        times[reps + r] = vs_now() - t0;
    }
    if (grad) memcpy(g_out, g, sizeof(double) * (size_t)n);
    vs_free_all();
}
#endif
