/* Globals: scalars, arrays, strings, struct initializers, pointers in initializers. */
#include <stdio.h>

struct point { double x, y; int tag; };

int counter = 5;
static double table[8] = {1.5, -2.25, 3.0};
const char *greeting = "hello, globals";
static const char message[] = "tab\there \"quoted\" \\ done";
struct point origin = {0.5, -0.5, 7};
static struct point pts[3] = {{1, 2, 3}, {4, 5, 6}};
int *counter_ptr = &counter;
static double *table_end = &table[7];
char buffer[32];
_Thread_local int tls_value = 11;

__attribute__((noinline)) void bump(void) {
    counter += 3;
    *counter_ptr *= 2;
    tls_value++;
    table[counter % 8] += 1.0;
}

int main(void) {
    for (int i = 0; i < 4; i++) bump();
    double s = 0;
    for (int i = 0; i < 8; i++) s += table[i];
    snprintf(buffer, sizeof buffer, "%s!", greeting);
    printf("%d %.17g %s %s\n", counter, s, buffer, message);
    printf("%.17g %d %.17g %.17g %d\n", origin.x, pts[1].tag, pts[0].y, *table_end, tls_value);
    return 0;
}
