/* Memory from an allocator called through a table of function pointers that the program
   could change (a mutable global, so the call cannot be made direct; issue 24 item 3):
   the derivative calls whichever function the table holds among those whose address the
   program takes (malloc, free, the counting allocator), so the buffer gets its shadow. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup;

static int allocations = 0;
static void *counting_malloc(size_t n) {
  allocations++;
  return malloc(n);
}

struct allocator {
  void *(*alloc)(size_t);
  void (*release)(void *);
} A = {malloc, free};

double f(const double *x) {
  double *t = A.alloc(2 * sizeof(double));
  t[0] = x[0] * x[0];
  t[1] = sin(x[1]);
  double s = t[0] * t[1];
  A.release(t);
  return s;
}

static int failures = 0;
static void check(const char *what, double got, double want) {
  int ok = fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, got, want);
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc > 5) A.alloc = counting_malloc; /* never at run time, but the compiler cannot know */
  double x[2] = {1.5, 0.7}, dx[2] = {0, 0};
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
  check("d/dx0", dx[0], 2 * x[0] * sin(x[1]));
  check("d/dx1", dx[1], x[0] * x[0] * cos(x[1]));
  A.alloc = counting_malloc;
  dx[0] = dx[1] = 0;
  __enzyme_autodiff((void *)f, enzyme_dup, x, dx);
  check("d/dx0 through the counting allocator", dx[0], 2 * x[0] * sin(x[1]));
  check("allocations counted", allocations, 1);
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
