/* Heap memory, memcpy/memset, linked lists, dynamic arrays, stack arrays of varying size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item { int key; double weight; struct item *next; };

__attribute__((noinline)) struct item *build(int n) {
    struct item *head = NULL;
    for (int i = 0; i < n; i++) {
        struct item *it = malloc(sizeof *it);
        it->key = i * 7 % 11;
        it->weight = i * 0.5;
        it->next = head;
        head = it;
    }
    return head;
}

__attribute__((noinline)) double walk(struct item *it) {
    double s = 0;
    while (it) {
        struct item *next = it->next;
        s += it->key * it->weight;
        free(it);
        it = next;
    }
    return s;
}

__attribute__((noinline)) int vla_sum(int n) {
    int tmp[n];
    memset(tmp, 0, sizeof(int) * n);
    for (int i = 0; i < n; i++) tmp[i] = i * i;
    int copy[64];
    memcpy(copy, tmp, sizeof(int) * (n < 64 ? n : 64));
    int s = 0;
    for (int i = 0; i < n && i < 64; i++) s += copy[i];
    return s;
}

int main(void) {
    double *buf = calloc(100, sizeof(double));
    for (int i = 0; i < 100; i++) buf[i] = i / 3.0;
    buf = realloc(buf, 200 * sizeof(double));
    memmove(buf + 100, buf, 100 * sizeof(double));
    double s = 0;
    for (int i = 0; i < 200; i++) s += buf[i];
    free(buf);
    printf("%.17g %.17g %d\n", s, walk(build(30)), vla_sum(40));
    return 0;
}
