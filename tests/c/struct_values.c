/* Structs of doubles as values in the active path (issue 24 item 3): returned from
   functions the optimizer keeps out of line ({double, double} in registers, a bigger one
   through memory), built and taken apart field by field, and an array of doubles inside a
   struct. Reverse and forward mode against closed forms. */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

typedef struct { double a, b; } pair;
typedef struct { double v[3]; double scale; } triple;

__attribute__((noinline)) static pair split(double x) {
  pair p = {x * x, sin(x)};
  return p;
}

__attribute__((noinline)) static triple spread(double x, double y) {
  triple t = {{x, x * y, y * y}, 0.5};
  return t;
}

__attribute__((noinline)) static pair swap_scaled(pair p, double k) {
  pair q = {p.b * k, p.a * k};
  return q;
}

double pairs(double x) {
  pair p = split(x);
  pair q = swap_scaled(p, 3.0);
  return p.a * q.a + q.b;
}

double triples(double x, double y) {
  triple t = spread(x, y);
  return t.scale * (t.v[0] + t.v[1] * t.v[2]);
}

static int failures = 0;
static void check(const char *what, double got, double want) {
  int ok = fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
  if (!ok) failures++;
  printf("%s %s: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, got, want);
}

typedef struct { double dx, dy; } grad2;
extern grad2 __enzyme_autodiff2(void *, double, double);

int main(void) {
  double x = 0.8, y = -1.3;
  /* pairs = x^2 * 3 sin x + 3 x^2 */
  double want = 6 * x * sin(x) + 3 * x * x * cos(x) + 6 * x;
  check("pairs reverse", __enzyme_autodiff((void *)pairs, x), want);
  check("pairs forward", __enzyme_fwddiff((void *)pairs, x, 1.0), want);
  /* triples = 0.5 (x + x y^3) */
  grad2 g = __enzyme_autodiff2((void *)triples, x, y);
  check("triples reverse dx", g.dx, 0.5 * (1 + y * y * y));
  check("triples reverse dy", g.dy, 0.5 * 3 * x * y * y);
  check("triples forward dx", __enzyme_fwddiff((void *)triples, x, 1.0, y, 0.0), 0.5 * (1 + y * y * y));
  printf("%d failure(s)\n", failures);
  return failures != 0;
}
