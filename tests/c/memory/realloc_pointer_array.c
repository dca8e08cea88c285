/* A realloc'd array of pointers into the input, read after the realloc: in reverse mode
   the new shadow block started zeroed, so the pointers' shadows stayed behind in the old
   one and the reverse sweep wrote through null (a segfault at every level before session
   31). Now the pointer shadows move with the pointers (ShadowCode._carry_pointer_shadows).
   Reverse and forward mode against closed forms; sizes from argc. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures;

static void check(const char *what, int i, double got, double want) {
    int ok = fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%-4s %-28s [%d] got %-24.17g want %.17g\n", ok ? "ok" : "FAIL", what, i, got, want);
}

/* picks x[0], x[2], x[4], ... into an array of pointers grown by doubling, then
   returns sum_k (k + 1) * (*p[k])^2 */
static double gather(double *x, int n) {
    int cap = 1, len = 0;
    double **p = malloc(cap * sizeof *p);
    for (int i = 0; i < n; i += 2) {
        if (len == cap) {
            cap *= 2;
            p = realloc(p, cap * sizeof *p);
        }
        p[len++] = &x[i];
    }
    double s = 0.0;
    for (int k = 0; k < len; k++)
        s += (k + 1) * *p[k] * *p[k];
    free(p);
    return s;
}

static double want(const double *x, int i) { return i % 2 ? 0.0 : 2.0 * (i / 2 + 1) * x[i]; }

int main(int argc, char **argv) {
    (void)argv;
    int n = 8 + argc; /* 9: five pointers, three reallocs */
    double x[16], dx[16] = {0};
    for (int i = 0; i < n; i++)
        x[i] = 0.4 + 0.3 * sin(1.7 * i);
    __enzyme_autodiff((void *)gather, enzyme_dup, x, dx, enzyme_const, n);
    for (int i = 0; i < n; i++)
        check("reverse", i, dx[i], want(x, i));
    for (int i = 0; i < n; i++) {
        double t[16] = {0};
        t[i] = 1.0;
        check("forward", i, __enzyme_fwddiff((void *)gather, enzyme_dup, x, t, enzyme_const, n), want(x, i));
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
