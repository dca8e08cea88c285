// Split forward mode (__enzyme_fwdsplit), issue 24 item 1 (the last open part): pointers
// the primal loads from memory and calls the derivative keeps.
//  * A linked list: the tangent pass walks the shadow list; the loop ends where the
//    primal list ended (the taped next pointers), and the primal list is freed before
//    __enzyme_fwdsplit runs.
//  * A recursive function of scalars (not inlined): its forward derivative is called
//    with the primal arguments, read from the tape or recomputed.
//  * Stack arrays filled through memcpy, and a result that is constant
//    (enzyme_const_return) next to an output written through a pointer.
//  * A NULL tape, as Enzyme's users pass one, where the tangent needs nothing from it.
//  * long double values (16 bytes on the tape, 10 stored) and a constant array of
//    structs read into locals, overwritten before __enzyme_fwdsplit.
// Checked against __enzyme_fwddiff on fresh inputs and closed forms.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int enzyme_dup, enzyme_const, enzyme_dupnoneed, enzyme_const_return;
typedef struct { void *tape; double value; } augmented;
extern augmented __enzyme_augmentfwd(void *, ...);
extern void *__enzyme_augmentfwd_p(void *, ...);
extern double __enzyme_fwdsplit(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int __enzyme_fwdsplit_i(void *, ...);
typedef struct { void *tape; long double value; } augmented_ld;
extern augmented_ld __enzyme_augmentfwd_ld(void *, ...);
extern long double __enzyme_fwdsplit_ld(void *, ...);
extern long double __enzyme_fwddiff_ld(void *, ...);

static int failures = 0;
static void check(const char *what, double got, double want) {
    if (!(fabs(got - want) <= 1e-10 * (1 + fabs(want)))) {
        printf("FAIL %s: got %.15g want %.15g\n", what, got, want);
        failures++;
    }
}

struct node { double value; struct node *next; };

// x^n by recursion: kept as a call (recursive functions are not inlined)
double ipow(double x, int n) { return n == 0 ? 1.0 : x * ipow(x, n - 1); }

double sum_list(const struct node *p, int k) {
    double s = 0;
    int i = 0;
    for (; p; p = p->next, i++) s += sin(p->value) * ipow(p->value, k + i % 2);
    return s;
}

static struct node *make_list(const double *v, int n) {
    struct node *head = NULL;
    for (int i = n - 1; i >= 0; i--) {
        struct node *q = malloc(sizeof *q);
        q->value = v[i];
        q->next = head;
        head = q;
    }
    return head;
}
static void free_list(struct node *p) {
    while (p) { struct node *q = p->next; free(p); p = q; }
}

// writes out[0..2] = a smoothed copy of v (stack arrays, memcpy); returns a count
int smooth3(double *out, const double *v) {
    double a[3], b[3];
    memcpy(a, v, sizeof a);
    for (int i = 0; i < 3; i++) b[i] = 0.5 * a[i] + 0.25 * (a[(i + 1) % 3] + a[(i + 2) % 3]) * a[i];
    memcpy(out, b, sizeof b);
    return b[0] > 0;
}

double bilinear(double x, double y) { return 3 * x * y + x; }

struct weight { double a; int k; };
long double weighted(long double *x, const struct weight *w, int n) {
    long double s = 0;
    for (int i = 0; i < n; i++) {
        struct weight q = w[i];
        long double v = x[i];
        s += sinl(v) * q.a * (q.k > 1 ? v : 1);
        x[i] = v * v;
    }
    return s;
}

int main(void) {
    enum { N = 5 };
    const double v[N] = {0.4, -1.3, 0.8, 2.1, -0.6}, dv[N] = {1.0, 0.5, -0.75, 0.25, 2.0};
    struct node *list = make_list(v, N), *shadow = make_list(dv, N);
    augmented a = __enzyme_augmentfwd((void *)sum_list, enzyme_dup, list, shadow, enzyme_const, 2);
    // the reference on a fresh pair of lists
    struct node *l2 = make_list(v, N), *s2 = make_list(dv, N);
    double dref = __enzyme_fwddiff((void *)sum_list, enzyme_dup, l2, s2, enzyme_const, 2);
    free_list(l2);
    free_list(s2);
    check("primal", a.value, sum_list(list, 2));
    free_list(list);  // the primal memory is gone
    double d = __enzyme_fwdsplit((void *)sum_list, enzyme_dup, (struct node *)NULL, shadow, enzyme_const, 2, a.tape);
    check("list tangent vs fwddiff", d, dref);
    double want = 0;
    for (int i = 0; i < N; i++) {
        int k = 2 + i % 2;
        want += (cos(v[i]) * pow(v[i], k) + sin(v[i]) * k * pow(v[i], k - 1)) * dv[i];
    }
    check("list tangent", d, want);
    free_list(shadow);

    double out[3], dout[3], w[3] = {0.3, -0.7, 1.2}, dw[3] = {1, 2, -1};
    void *t = __enzyme_augmentfwd_p((void *)smooth3, enzyme_dup, out, dout, enzyme_dup, w, dw, enzyme_const_return);
    double ref_out[3], ref_dout[3], w2[3] = {0.3, -0.7, 1.2};
    (void)__enzyme_fwdsplit_i((void *)smooth3, enzyme_dupnoneed, (double *)NULL, dout, enzyme_dup, (double *)NULL,
                              dw, enzyme_const_return, t);
    (void)__enzyme_fwddiff((void *)smooth3, enzyme_dup, ref_out, ref_dout, enzyme_dup, w2, dw, enzyme_const_return);
    for (int i = 0; i < 3; i++) {
        check("smooth3 primal", out[i], ref_out[i]);
        check("smooth3 tangent", dout[i], ref_dout[i]);
    }
    long double lx[3] = {0.5L, 1.5L, -0.25L}, ldx[3] = {1, 2, 3}, rx[3] = {0.5L, 1.5L, -0.25L}, rdx[3] = {1, 2, 3};
    struct weight wts[3] = {{1.5, 0}, {2.5, 2}, {-1, 3}}, wref[3] = {{1.5, 0}, {2.5, 2}, {-1, 3}};
    augmented_ld la = __enzyme_augmentfwd_ld((void *)weighted, lx, ldx, enzyme_const, wts, enzyme_const, 3);
    for (int i = 0; i < 3; i++) { wts[i].a = 99; wts[i].k = -1; lx[i] = 7; }
    long double ld = __enzyme_fwdsplit_ld((void *)weighted, (long double *)NULL, ldx, enzyme_const,
                                          (struct weight *)NULL, enzyme_const, 3, la.tape);
    long double lr = __enzyme_fwddiff_ld((void *)weighted, rx, rdx, enzyme_const, wref, enzyme_const, 3);
    check("long double tangent", (double)ld, (double)lr);
    for (int i = 0; i < 3; i++) check("long double tangent in place", (double)ldx[i], (double)rdx[i]);
    check("NULL tape", __enzyme_fwdsplit((void *)bilinear, 2.0, 0.5, 3.0, -1.0, (void *)NULL),
          (3 * 3.0 + 1) * 0.5 + 3 * 2.0 * -1.0);
    if (failures) return 1;
    printf("ok\n");
    return 0;
}
