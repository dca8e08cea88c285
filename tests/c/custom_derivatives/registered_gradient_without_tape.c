// A registered gradient whose augmented pass returns the result alone (no tape), and
// whose gradient takes the arguments and the result's adjoint only, issue 24 item 2.
// The registered derivative is 3 * d, not the body's 2x, to be recognizable.
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);

double sq(double x) { return x * x; }
double sq_augment(double x) { return x * x; }
double sq_gradient(double x, double d) { (void)x; return 3 * d; }
void *__enzyme_register_gradient_sq[3] = {(void *)sq, (void *)sq_augment, (void *)sq_gradient};

double poly(double x) { return sq(x) * 2 + sq(x + 1); }

int main(void) {
    double d = __enzyme_autodiff((void *)poly, 1.5);
    if (fabs(d - (3 * 2 + 3)) > 1e-14) { printf("FAIL poly: %g\n", d); return 1; }
    double e = __enzyme_autodiff((void *)sq, 1.5);
    if (fabs(e - 3) > 1e-14) { printf("FAIL sq: %g\n", e); return 1; }
    printf("ok\n");
    return 0;
}
