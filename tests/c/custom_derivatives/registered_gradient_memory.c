// Registered custom gradients on functions that read and write memory, issue 24 item 2:
// augment(src, d_src, dest, d_dest) runs the primal and returns a tape, gradient(src,
// d_src, dest, d_dest, tape) adds into d_src; called in a loop (one pair per call, in
// reverse order of the calls), under __enzyme_autodiff and under split mode
// (__enzyme_augmentfwd / __enzyme_reverse), where the tapes of the registered calls
// travel inside zymase's own tape. The registered gradient is 5x the true one.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern double __enzyme_autodiff(void *, ...);
extern void *__enzyme_augmentfwd(void *, ...);
extern void __enzyme_reverse(void *, ...);
extern int enzyme_dup, enzyme_const;

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (fabs(got - want) > 1e-12 * (1 + fabs(want))) {
        printf("FAIL %s: got %.17g want %.17g\n", what, got, want);
        failures++;
    }
}

// dest = src^2 (the body; never differentiated)
void square_into(const double *src, double *dest) { *dest = *src * *src; }

static int augments = 0, gradients = 0, order_ok = 1, last_index = 1 << 30;
typedef struct { double src; int index; } square_tape;
void *square_augment(const double *src, const double *d_src, double *dest, double *d_dest) {
    (void)d_src; (void)d_dest;
    square_tape *t = malloc(sizeof *t);
    t->src = *src;
    t->index = augments++;
    *dest = *src * *src;
    return t;
}
void square_gradient(const double *src, double *d_src, const double *dest, double *d_dest, void *tape) {
    (void)src; (void)dest;
    square_tape *t = tape;
    gradients++;
    if (t->index > last_index) order_ok = 0;  // the reverse sweep meets the calls last to first
    last_index = t->index;
    *d_src += 5 * 2 * t->src * *d_dest;
    *d_dest = 0;
    free(t);
}
void *__enzyme_register_gradient_square_into[3] = {(void *)square_into, (void *)square_augment,
                                                    (void *)square_gradient};

// y[i] = x[i]^2 * w[i], through square_into, in a loop
void weigh(double *y, const double *x, const double *w, int n) {
    for (int i = 0; i < n; i++) {
        double t;
        square_into(&x[i], &t);
        y[i] = t * w[i];
    }
}

double total(const double *x, const double *w, int n) {
    double y[16], s = 0;
    weigh(y, x, w, n);
    for (int i = 0; i < n; i++) s += y[i];
    return s;
}

int main(void) {
    enum { N = 7 };
    double x[N], dx[N] = {0}, w[N];
    for (int i = 0; i < N; i++) { x[i] = 0.3 * i - 0.8; w[i] = 1.0 + 0.5 * i; }
    __enzyme_autodiff((void *)total, enzyme_dup, x, dx, enzyme_const, w, enzyme_const, N);
    for (int i = 0; i < N; i++) check("combined d/dx", dx[i], 5 * 2 * x[i] * w[i]);
    check("augments", augments, N);
    check("gradients", gradients, N);
    check("reverse order", order_ok, 1);

    augments = gradients = 0;
    last_index = 1 << 30;
    double y[N], dy[N], dx2[N] = {0}, x0[N];
    for (int i = 0; i < N; i++) { dy[i] = 1.0 + i; x0[i] = x[i]; }
    void *tape = __enzyme_augmentfwd((void *)weigh, enzyme_dup, y, dy, enzyme_dup, x, dx2, enzyme_const, w,
                                     enzyme_const, N);
    for (int i = 0; i < N; i++) { check("split primal", y[i], x0[i] * x0[i] * w[i]); x[i] = -99; }
    check("split augments", augments, N);
    check("no gradient yet", gradients, 0);
    __enzyme_reverse((void *)weigh, enzyme_dup, y, dy, enzyme_dup, x, dx2, enzyme_const, w, enzyme_const, N, tape);
    for (int i = 0; i < N; i++) check("split d/dx", dx2[i], 5 * 2 * x0[i] * w[i] * (1.0 + i));
    check("split gradients", gradients, N);
    check("split reverse order", order_ok, 1);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
