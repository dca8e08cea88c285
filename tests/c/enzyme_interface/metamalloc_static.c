/* Enzyme's metamalloc pattern: malloc called through a function pointer held in a
   static global that is never written (a struct field, and a global that is itself the
   pointer): the memory it returns gets a shadow at every level, -O0 included, in
   reverse and forward mode and in a loop. Guards issue 24 item 2 (metamalloc). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures;

static void check(const char *what, double at, double got, double want) {
    int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
    printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
    failures += !ok;
}

static struct {
    int count;
    void *(*allocfn)(size_t);
} table = {0, malloc};
static void *(*alloc_pointer)(size_t) = malloc;

__attribute__((noinline)) static void *meta_alloc(size_t size) { return table.allocfn(size); }
__attribute__((noinline)) static void *pointer_alloc(size_t size) { return alloc_pointer(size); }
__attribute__((noinline)) static void square(double *x) { *x *= *x; }

/* x^2 through memory from meta_alloc: 2x */
double through_table(double x) {
    double *mem = meta_alloc(sizeof(double));
    *mem = x;
    square(mem);
    double r = mem[0];
    free(mem);
    return r;
}

/* sum_k (k x)^2 in a buffer from pointer_alloc: 2 x sum k^2 = 28 x */
double through_pointer(double x) {
    double *buf = pointer_alloc(3 * sizeof(double));
    for (int k = 1; k <= 3; k++) buf[k - 1] = k * x;
    double s = 0;
    for (int k = 0; k < 3; k++) s += buf[k] * buf[k];
    free(buf);
    return s;
}

int main(void) {
    double xs[] = {-2.0, 0.5, 3.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i];
        check("rev through_table", x, __enzyme_autodiff((void *)through_table, x), 2 * x);
        check("fwd through_table", x, __enzyme_fwddiff((void *)through_table, x, 1.0), 2 * x);
        check("rev through_pointer", x, __enzyme_autodiff((void *)through_pointer, x), 28 * x);
        check("fwd through_pointer", x, __enzyme_fwddiff((void *)through_pointer, x, 1.0), 28 * x);
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
