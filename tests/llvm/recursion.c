/* Recursion and mutual recursion. */
#include <stdio.h>

__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int is_odd(unsigned n);
__attribute__((noinline)) static int is_even(unsigned n) { return n == 0 ? 1 : is_odd(n - 1); }
__attribute__((noinline)) static int is_odd(unsigned n) { return n == 0 ? 0 : is_even(n - 1); }

__attribute__((noinline)) double power(double x, int n) {
    if (n == 0) return 1.0;
    double h = power(x, n / 2);
    return n % 2 ? h * h * x : h * h;
}

__attribute__((noinline)) int ackermann(int m, int n) {
    if (m == 0) return n + 1;
    if (n == 0) return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

int main(void) {
    printf("%ld %d %d %.17g %d\n", fib(24), is_even(77), is_odd(77), power(1.0001, 1000),
           ackermann(2, 3));
    return 0;
}
