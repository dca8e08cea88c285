// Split forward mode (__enzyme_augmentfwd / __enzyme_fwdsplit), issue 24 item 1 (the
// last open part): the tangent function reads the primal values it needs from the tape
// the augmented forward pass wrote, so
//  * the primal inputs are overwritten between the two calls, and the primal pointers
//    passed to __enzyme_fwdsplit are NULL (as Enzyme's own users pass them);
//  * the primal's side effects are not run again: a global counter f increments, the
//    in-place update of x, a malloc/free pair, an external call;
//  * the tangents equal __enzyme_fwddiff's on a fresh copy of the inputs, and finite
//    differences;
//  * two tapes are live at once and consumed out of order; a caller-owned tape
//    (enzyme_allocated, __enzyme_augmentsize, enzyme_tape) works on both calls;
//  * with enzyme_nofree one tape gives several tangent directions (Enzyme's users
//    linearize once and apply the linearization many times); the last call frees it.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int enzyme_dup, enzyme_const, enzyme_allocated, enzyme_tape, enzyme_nofree;
typedef struct { void *tape; double value; } augmented;
extern augmented __enzyme_augmentfwd(void *, ...);
extern void __enzyme_augmentfwd_own(void *, ...);
extern void *__enzyme_augmentfwd_p(void *, ...);
extern int __enzyme_augmentsize(void *, ...);
extern double __enzyme_fwdsplit(void *, ...);
extern void __enzyme_fwdsplit_v(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern void __enzyme_fwddiff_v(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (!(fabs(got - want) <= 1e-9 * (1 + fabs(want)))) {
        printf("FAIL %s: got %.15g want %.15g\n", what, got, want);
        failures++;
    }
}

int calls = 0;   // incremented by every primal run of relax and residual
int noted = 0;   // incremented by note(), an external side effect
__attribute__((noinline)) void note(int k) { noted += k; }

// In place: x[i] <- a data-dependent mix of sin, exp and its neighbour, through a
// malloc'd scratch copy; returns a weighted energy. Loop trip counts and branches
// depend on loaded values, which the tangent function must take from the tape.
double relax(double *x, int n, double s) {
    calls++;
    double *old = malloc(n * sizeof(double));
    memcpy(old, x, n * sizeof(double));
    double e = 0;
    for (int i = 0; i < n; i++) {
        double v = sin(old[i]) * old[(i + 1) % n] * s;
        x[i] = v > 0 ? v : exp(v) - 1;
        int k = 0;
        while (k < 3 && x[i] * x[i] < 0.5 * k) k++;  // a loop whose trip count is data
        e += x[i] * x[i] * (k + 1);
    }
    free(old);
    note(n);
    return e;
}

// Out of place, void: r = A(q) q with a square root and a division (computeS-like).
void residual(double *r, const double *q, int n) {
    calls++;
    double norm = 0;
    for (int i = 0; i < n; i++) norm += q[i] * q[i];
    norm = sqrt(norm);
    for (int i = 0; i < n; i++) r[i] = q[i] / (1 + norm) + q[(i + n - 1) % n] * q[i];
}

int main(void) {
    enum { N = 5 };
    const double x0[N] = {0.3, 0.7, -1.1, 2.0, 0.45}, t0[N] = {1.0, -0.5, 0.25, 2.0, -1.5};
    const double y0[N] = {-0.2, 1.3, 0.9, -0.6, 1.7}, u0[N] = {0.5, 0.5, -1.0, 0.75, 1.0};
    const double s = 1.5, ds = 0.3;

    // the reference: forward mode on fresh copies
    double xr[N], dxr[N], yr[N], dyr[N];
    memcpy(xr, x0, sizeof xr); memcpy(dxr, t0, sizeof dxr);
    memcpy(yr, y0, sizeof yr); memcpy(dyr, u0, sizeof dyr);
    double de_ref = __enzyme_fwddiff((void *)relax, enzyme_dup, xr, dxr, enzyme_const, N, s, ds);
    double de_ref_y = __enzyme_fwddiff((void *)relax, enzyme_dup, yr, dyr, enzyme_const, N, 0.5, 0.0);

    // two augmented forward passes, live at once
    double x[N], y[N], dx[N], dy[N];
    memcpy(x, x0, sizeof x); memcpy(y, y0, sizeof y);
    augmented ax = __enzyme_augmentfwd((void *)relax, enzyme_dup, x, dx, enzyme_const, N, s);
    augmented ay = __enzyme_augmentfwd((void *)relax, enzyme_dup, y, dy, enzyme_const, N, 0.5);
    double xp[N];
    memcpy(xp, x0, sizeof xp);
    check("primal value", ax.value, relax(xp, N, s));
    for (int i = 0; i < N; i++) check("primal in place", x[i], xp[i]);
    int calls_before = calls, noted_before = noted;

    // clobber the inputs; the tangent functions read only their tangents and the tapes
    for (int i = 0; i < N; i++) x[i] = y[i] = 1e6;
    memcpy(dy, u0, sizeof dy);
    double de_y = __enzyme_fwdsplit((void *)relax, enzyme_dup, (double *)NULL, dy, enzyme_const, N, 0.5, 0.0,
                                    ay.tape);
    memcpy(dx, t0, sizeof dx);
    double de = __enzyme_fwdsplit((void *)relax, enzyme_dup, (double *)NULL, dx, enzyme_const, N, s, ds, ax.tape);
    check("tangent of the result", de, de_ref);
    check("tangent of the result (second tape)", de_y, de_ref_y);
    for (int i = 0; i < N; i++) {
        check("tangent in place", dx[i], dxr[i]);
        check("tangent in place (second tape)", dy[i], dyr[i]);
        check("inputs untouched by fwdsplit", x[i], 1e6);
    }
    if (calls != calls_before || noted != noted_before) {
        printf("FAIL the primal's side effects ran again: calls %d -> %d, noted %d -> %d\n", calls_before, calls,
               noted_before, noted);
        failures++;
    }

    // finite differences of the energy along (t0, ds)
    {
        double h = 1e-6, xa[N], xb[N];
        for (int i = 0; i < N; i++) { xa[i] = x0[i] + h * t0[i]; xb[i] = x0[i] - h * t0[i]; }
        double fd = (relax(xa, N, s + h * ds) - relax(xb, N, s - h * ds)) / (2 * h);
        if (fabs(de - fd) > 1e-5 * (1 + fabs(fd))) {
            printf("FAIL finite differences: %.10g vs %.10g\n", de, fd);
            failures++;
        }
    }

    // a caller-owned tape, sized by __enzyme_augmentsize, on a void function; in a loop
    int size = __enzyme_augmentsize((void *)residual, enzyme_dup, enzyme_dup, enzyme_const);
    void *buffer = malloc(size);
    for (int round = 0; round < 3; round++) {
        double q[N], dq[N], r[N], dr[N], rr[N], drr[N], qq[N];
        for (int i = 0; i < N; i++) { q[i] = qq[i] = x0[i] * (1 + round); dq[i] = u0[i]; }
        __enzyme_augmentfwd_own((void *)residual, enzyme_allocated, size, enzyme_tape, buffer, enzyme_dup, r,
                                (double *)NULL, enzyme_dup, q, (double *)NULL, enzyme_const, N);
        for (int i = 0; i < N; i++) q[i] = r[i] = -3;  // clobbered
        int before = calls;
        __enzyme_fwdsplit_v((void *)residual, enzyme_allocated, size, enzyme_tape, buffer, enzyme_dup,
                            (double *)NULL, dr, enzyme_dup, (double *)NULL, dq, enzyme_const, N);
        if (calls != before) { printf("FAIL residual ran again\n"); failures++; }
        __enzyme_fwddiff_v((void *)residual, enzyme_dup, rr, drr, enzyme_dup, qq, dq, enzyme_const, N);
        for (int i = 0; i < N; i++) check("residual tangent", dr[i], drr[i]);
    }
    free(buffer);

    // one augmented pass, three tangent directions; enzyme_nofree keeps the tape
    {
        double q[N], r[N];
        memcpy(q, y0, sizeof q);
        void *tape = __enzyme_augmentfwd_p((void *)residual, enzyme_nofree, enzyme_dup, r, (double *)NULL, enzyme_dup,
                                           q, (double *)NULL, enzyme_const, N);
        memset(q, 0, sizeof q);
        for (int k = 0; k < 3; k++) {
            double dq[N], dr[N], rr[N], drr[N], qq[N];
            for (int i = 0; i < N; i++) { dq[i] = (i == k) - 0.5 * (i == k + 1); qq[i] = y0[i]; }
            if (k < 2)
                __enzyme_fwdsplit_v((void *)residual, enzyme_nofree, enzyme_dup, (double *)NULL, dr, enzyme_dup,
                                    (double *)NULL, dq, enzyme_const, N, tape);
            else
                __enzyme_fwdsplit_v((void *)residual, enzyme_dup, (double *)NULL, dr, enzyme_dup, (double *)NULL, dq,
                                    enzyme_const, N, tape);
            __enzyme_fwddiff_v((void *)residual, enzyme_dup, rr, drr, enzyme_dup, qq, dq, enzyme_const, N);
            for (int i = 0; i < N; i++) check("direction of a kept tape", dr[i], drr[i]);
        }
    }

    if (failures) return 1;
    printf("ok\n");
    return 0;
}
