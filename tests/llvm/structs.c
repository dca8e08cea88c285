/* Structs by value (byval/sret), nested structs, unions, arrays of structs. */
#include <stdio.h>

struct vec3 { double x, y, z; };
struct small { int a; char b; short c; };
struct big { double m[6]; long id; };
struct node { struct vec3 pos; struct small meta; };
union num { double d; long long i; unsigned char bytes[8]; };

__attribute__((noinline)) struct vec3 add(struct vec3 a, struct vec3 b) {
    struct vec3 r = {a.x + b.x, a.y + b.y, a.z + b.z};
    return r;
}

__attribute__((noinline)) struct small pack(int a, char b, short c) {
    struct small s = {a, b, c};
    return s;
}

__attribute__((noinline)) double trace(struct big b) { return b.m[0] + b.m[3] + b.m[5] + b.id; }

__attribute__((noinline)) struct big scale(struct big b, double f) {
    for (int i = 0; i < 6; i++) b.m[i] *= f;
    b.id += 1;
    return b;
}

int main(void) {
    struct vec3 a = {1, 2, 3}, b = {0.5, 0.25, 0.125};
    struct vec3 c = add(a, b);
    struct small s = pack(-7, 'x', 300);
    struct big g = {{1, 2, 3, 4, 5, 6}, 40};
    struct big h = scale(g, 0.5);
    struct node nodes[4];
    for (int i = 0; i < 4; i++) {
        nodes[i].pos = add(c, a);
        nodes[i].meta = pack(i, (char)('a' + i), (short)(i * 1000));
        c.x += 1;
    }
    union num u;
    u.d = 1.0;
    printf("%.17g %.17g %.17g\n", c.x, c.y, c.z);
    printf("%d %c %d %.17g %.17g %ld\n", s.a, s.b, s.c, trace(g), trace(h), h.id);
    printf("%.17g %c %d %llx %d\n", nodes[3].pos.x, nodes[2].meta.b, nodes[3].meta.c, u.i, u.bytes[7]);
    return 0;
}
