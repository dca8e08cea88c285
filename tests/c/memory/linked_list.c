/* A heap-allocated linked list built inside the function from an array (push-front and sorted insertion), reduced and freed: reverse and forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

static int failures;

/* Passes when |got - want| <= tol * max(1, |want|); a NaN never passes. */
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= tol * scale;
    failures += !ok;
    printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
           ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define TOL 1e-8

struct node {
    double val;
    struct node *next;
};

static void free_list(struct node *p) {
    while (p) {
        struct node *q = p->next;
        free(p);
        p = q;
    }
}

/* push sin(x_i) at the front, then sum val * next->val (the last node times 1) */
static double list_products(const double *x, int n) {
    struct node *head = NULL;
    for (int i = 0; i < n; i++) {
        struct node *p = malloc(sizeof *p);
        p->val = sin(x[i]);
        p->next = head;
        head = p;
    }
    double s = 0.0;
    for (struct node *p = head; p; p = p->next)
        s += p->val * (p->next ? p->next->val : 1.0);
    free_list(head);
    return s;
}

/* insert x_i into an ascending list; return sum_k (k + 1) * val_k */
static double sorted_list(const double *x, int n) {
    struct node *head = NULL;
    for (int i = 0; i < n; i++) {
        struct node *p = malloc(sizeof *p), **at = &head;
        p->val = x[i];
        while (*at && (*at)->val < x[i])
            at = &(*at)->next;
        p->next = *at;
        *at = p;
    }
    double s = 0.0;
    int k = 1;
    for (struct node *p = head; p; p = p->next)
        s += k++ * p->val;
    free_list(head);
    return s;
}

#define NMAX 32

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 8; /* 9 */
    double x[NMAX], dx[NMAX], t[NMAX];
    for (int i = 0; i < n; i++) {
        x[i] = 3.0 * fmod(0.7548776662 * (i + 2), 1.0) - 1.5;
        t[i] = 0.2 * i - 0.6;
    }
    /* s = sum_{i>=1} sin x_i sin x_{i-1} + sin x_0 */
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)list_products, enzyme_dup, x, dx, n);
    double fwd = 0.0;
    for (int j = 0; j < n; j++) {
        double nb = (j > 0 ? sin(x[j - 1]) : 1.0) + (j + 1 < n ? sin(x[j + 1]) : 0.0);
        check("list_products dx", j, dx[j], cos(x[j]) * nb, TOL);
        fwd += cos(x[j]) * nb * t[j];
    }
    check("list_products forward", n, __enzyme_fwddiff((void *)list_products, enzyme_dup, x, t, n), fwd, TOL);

    for (int i = 0; i < n; i++) dx[i] = 0.0;
    __enzyme_autodiff((void *)sorted_list, enzyme_dup, x, dx, n);
    fwd = 0.0;
    for (int i = 0; i < n; i++) {
        int rank = 0;
        for (int j = 0; j < n; j++) rank += x[j] < x[i];
        check("sorted_list dx = rank + 1", i, dx[i], rank + 1.0, TOL);
        fwd += (rank + 1.0) * t[i];
    }
    check("sorted_list forward", n, __enzyme_fwddiff((void *)sorted_list, enzyme_dup, x, t, n), fwd, TOL);
    printf("%s: %d failure(s)\n", __FILE__, failures);
    return failures != 0;
}
