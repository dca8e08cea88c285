/* Dense and sparse switches, fallthrough, switch in loops. */
#include <stdio.h>

__attribute__((noinline)) int dense(int k) {
    switch (k) {
    case 0: return 10;
    case 1: return 11;
    case 2: case 3: return 23;
    case 4: return 14;
    case 5: return 99;
    case 6: return -6;
    default: return k * 2;
    }
}

__attribute__((noinline)) double sparse(long k, double x) {
    switch (k) {
    case -1000: x += 1; /* fallthrough */
    case 7: x *= 2; break;
    case 123456789: x = -x; break;
    case 42: return x / 3;
    default: x -= 0.5;
    }
    return x;
}

__attribute__((noinline)) const char *name(unsigned char c) {
    switch (c) {
    case 'a': return "alpha";
    case 'b': return "beta";
    case 'z': return "zeta";
    default: return "other";
    }
}

int main(void) {
    long total = 0;
    double x = 1.0;
    for (int i = -3; i < 12; i++) total += dense(i);
    long keys[] = {-1000, 7, 123456789, 42, 5, 0};
    for (int i = 0; i < 6; i++) x = sparse(keys[i], x) + 0.25;
    printf("%ld %.17g %s %s %s\n", total, x, name('a'), name('z'), name('q'));
    return 0;
}
