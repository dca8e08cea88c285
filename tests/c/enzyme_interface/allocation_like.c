/* Custom allocators registered with Enzyme's __enzyme_allocation_like[4] =
   {alloc, (void *)size_index, (void *)"free-args", (void *)dealloc}: memory they
   return gets a shadow (calloc'd of the size argument, freed at the allocation's mirror
   point in reverse mode and with the registered deallocator in forward mode), so the
   derivatives through it are right, in reverse and forward mode and in a loop.
   Guards issue 24 item 2 (allocation_like). */
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

/* a bump allocator in a static arena; the size is argument 1 */
static _Alignas(16) char arena[1 << 16];
static int arena_used;
void *arena_alloc(void *base, int size, int *used) {
    char *at = (char *)base + *used;
    *used += (size + 15) / 16 * 16;
    return at;
}
void arena_release(int *used, void *p) { (void)used; (void)p; }

/* malloc with a count of live blocks; the size is argument 0 */
static int live_blocks;
void *counted_alloc(size_t n) {
    live_blocks++;
    return malloc(n);
}
void counted_free(void *p) {
    live_blocks--;
    free(p);
}

void *__enzyme_allocation_like[4] = {(void *)arena_alloc, (void *)1, (void *)"2,-1", (void *)arena_release};
void *__enzyme_allocation_like_counted[4] = {(void *)counted_alloc, (void *)0, (void *)"-1", (void *)counted_free};

__attribute__((noinline)) static double *cube_into_arena(double x) {
    double *m = arena_alloc(arena, sizeof(double), &arena_used);
    *m = x * x * x;
    return m;
}

/* x^3 * x through arena memory: 4 x^3 */
double arena_power(double x) {
    double *t = cube_into_arena(x);
    double r = *t * x;
    arena_release(&arena_used, t);
    return r;
}

/* sum_k (x + k)^2 kept in a counted buffer: 2 sum_k (x + k) = 8x + 12 */
double counted_squares(double x) {
    double *buf = counted_alloc(4 * sizeof(double));
    for (int k = 0; k < 4; k++) buf[k] = (x + k) * (x + k);
    double s = 0;
    for (int k = 0; k < 4; k++) s += buf[k];
    counted_free(buf);
    return s;
}

int main(void) {
    double xs[] = {-1.5, 0.5, 2.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i];
        check("rev arena_power", x, __enzyme_autodiff((void *)arena_power, x), 4 * x * x * x);
        check("fwd arena_power", x, __enzyme_fwddiff((void *)arena_power, x, 1.0), 4 * x * x * x);
        check("rev counted_squares", x, __enzyme_autodiff((void *)counted_squares, x), 8 * x + 12);
        check("fwd counted_squares", x, __enzyme_fwddiff((void *)counted_squares, x, 1.0), 8 * x + 12);
    }
    check("every counted block freed", 0, live_blocks, 0);
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
