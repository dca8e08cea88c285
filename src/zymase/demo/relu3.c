/* Enzyme's classic first example: the derivative of relu3 synthesized by zymase. */
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

double relu3(double x) {
    if (x > 0)
        return x * x * x;
    return 0;
}

int main(void) {
    double xs[] = {-2.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0};
    int failures = 0;
    printf("%8s %12s %16s %16s %14s\n", "x", "relu3(x)", "reverse d/dx", "forward d/dx", "3x^2 (x>0)");
    for (int i = 0; i < 7; i++) {
        double x = xs[i];
        double rev = __enzyme_autodiff((void *)relu3, x);
        double fwd = __enzyme_fwddiff((void *)relu3, x, 1.0);
        double exact = x > 0 ? 3 * x * x : 0.0;
        printf("%8.2f %12.5f %16.10f %16.10f %14.10f\n", x, relu3(x), rev, fwd, exact);
        failures += rev != exact || fwd != exact;
    }
    return failures != 0;
}
