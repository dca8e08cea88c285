/* Variadic functions (va_list, va_arg) and printf with many argument types. */
#include <stdarg.h>
#include <stdio.h>

__attribute__((noinline)) double sum_doubles(int count, ...) {
    va_list ap;
    va_start(ap, count);
    double s = 0;
    for (int i = 0; i < count; i++) s += va_arg(ap, double);
    va_end(ap);
    return s;
}

__attribute__((noinline)) long mixed(const char *fmt, ...) {
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    long total = 0;
    for (const char *p = fmt; *p; p++) {
        if (*p == 'i') total += va_arg(ap, int);
        else if (*p == 'l') total += va_arg(ap, long) * 2;
        else if (*p == 'd') total += (long)(va_arg(ap, double) * 10);
    }
    total += va_arg(copy, int);
    va_end(copy);
    va_end(ap);
    return total;
}

int main(void) {
    printf("%.17g\n", sum_doubles(4, 0.5, 1.25, -3.0, 1e-3));
    printf("%ld\n", mixed("ildi", 3, 40L, 2.75, -7));
    printf("%c|%5s|%-4d|%x|%lu|%e|%g\n", 'Q', "ab", 12, 255u, 123456789012UL, 6.02e23, 0.1f);
    return 0;
}
