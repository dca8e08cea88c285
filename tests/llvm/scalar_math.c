/* Scalar arithmetic, exact constants and numeric casts. */
#include <stdio.h>

double tiny = 1e-300;
float tenth_f = 0.1f;
double tenth = 0.1;
long double half_ld = 0.5L;

__attribute__((noinline)) double poly(double x) {
    return ((0.1 * x - 1e-300) * x + 3.0e10) * x - 0.3333333333333333;
}

__attribute__((noinline)) float polyf(float x) { return 0.1f * x * x + 1.5f * x - 7.25f; }

__attribute__((noinline)) int conv(double d, unsigned u, long long l) {
    int a = (int)d;
    unsigned b = (unsigned)(d * 3.0);
    double c = (double)u;
    float f = (float)l;
    return a + (int)b + (int)(c / 7.0) + (int)f;
}

__attribute__((noinline)) double divs(double a, double b) { return a / b - a * b + (a - b); }

int main(void) {
    double acc = 0.0;
    for (int i = 0; i < 20; i++) {
        acc += poly(i * 0.37) / (1.0 + i);
        acc -= polyf((float)i * 0.5f);
    }
    printf("%.17g\n", acc);
    printf("%.17g %.9g %.17g\n", tiny * 1e300, tenth_f, tenth);
    printf("%d\n", conv(12.75, 4000000000u, -123456789012LL));
    printf("%.17g\n", divs(-0.0, 3.0));
    printf("%.17g\n", (double)(half_ld * 3.0L));
    printf("%.17g %.17g\n", -0.0 * 1.0, 1.0 / 3.0);
    return 0;
}
