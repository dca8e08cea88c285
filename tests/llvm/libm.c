/* libm calls and math intrinsics. */
#include <math.h>
#include <stdio.h>

__attribute__((noinline)) double mix(double x) {
    return sin(x) * cos(x) + exp(-x) + log(x + 2.0) + pow(x, 1.5) + sqrt(x) + fabs(-x) +
           floor(x * 3.7) + ceil(x) + fmax(x, 0.3) + fmin(x, 0.7) + fma(x, 2.0, 0.1) +
           atan2(x, 1.0) + tanh(x) + copysign(1.0, -x) + exp2(x) + log2(x + 1) + cbrt(x) +
           hypot(x, 3.0) + round(x * 10) + trunc(-x * 7);
}

__attribute__((noinline)) float mixf(float x) {
    return sinf(x) + expf(x) + sqrtf(x) + powf(x, 2.5f) + fabsf(-x) + logf(x + 1.0f);
}

int main(void) {
    double s = 0;
    float t = 0;
    for (int i = 1; i <= 40; i++) {
        s += mix(i * 0.05);
        t += mixf(i * 0.05f);
    }
    printf("%.15g %.6g %.17g %d\n", s, t, ldexp(0.75, 5), isnan(sqrt(-1.0)) != 0);
    return 0;
}
