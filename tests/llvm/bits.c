/* Integer bit manipulation, small integer types, unsigned overflow, 128-bit math. */
#include <stdint.h>
#include <stdio.h>

__attribute__((noinline)) uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }

__attribute__((noinline)) int popcount(uint64_t x) {
    int n = 0;
    while (x) { x &= x - 1; n++; }
    return n;
}

__attribute__((noinline)) uint64_t hash(const unsigned char *s, int n) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) { h ^= s[i]; h *= 1099511628211ULL; }
    return h;
}

__attribute__((noinline)) short narrow(signed char a, unsigned char b, short c) {
    return (short)(a * b - c);
}

__attribute__((noinline)) unsigned __int128 mul128(uint64_t a, uint64_t b) {
    return (unsigned __int128)a * b;
}

__attribute__((noinline)) _Bool flag(int x) { return x > 3; }

int main(void) {
    unsigned char data[] = "zymase bit twiddling";
    unsigned __int128 p = mul128(0xFFFFFFFFFFFFFFFFULL, 12345);
    printf("%u %d %llu %d\n", rotl(0x80000001u, 3), popcount(0xF0F0F0F0F0F0ULL),
           (unsigned long long)hash(data, 20), narrow(-5, 200, 1000));
    printf("%llx %llx %d %d %d\n", (unsigned long long)(p >> 64), (unsigned long long)p, flag(2),
           flag(9), (int)(-17 / 4) + (-17 % 4) + (int)(17u >> 2));
    return 0;
}
