/* Pointers that walk through an array by a step that changes from one row to the next, so
   the reverse sweep cannot rebuild them from the iteration number and reads them back from
   the tape (as offsets from the object they point into, when there is exactly one):
   - packed_lower: y = L x for a lower-triangular L stored row by row and read with `*p++`,
                   objective sum_i w_i y_i^2 / 2; dL_ij = w_i y_i x_j, dx = L^T (w .* y);
   - rows_of_copy: a malloc'd buffer filled from x, read row by row with rows of growing
                   length, objective sum_i c_i (sum_j sin(row_i[j]))^2;
   - either_array: rows of two packed triangles a and b, taking each row from a or b by
                   its parity (a pointer into one of two objects), objective sum_i y_i^2 / 2
                   with y_i = row_i . x.
   Every expected value is the closed form above, and forward mode along one direction must
   equal the gradient's dot product with it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

extern void __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

#define TOL 1e-8

static int failures;

static void check(const char *what, int at, double got, double want) {
    double scale = fabs(want) > 1.0 ? fabs(want) : 1.0;
    int ok = fabs(got - want) <= TOL * scale;
    failures += !ok;
    printf("%-4s %-14s[%2d] got %-24.17g want %-24.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

__attribute__((noinline)) static double packed_lower(const double *l, const double *x, const double *w, int n) {
    double s = 0.0;
    const double *p = l;
    for (int i = 0; i < n; i++) {
        double y = 0.0;
        for (int j = 0; j <= i; j++)
            y += *p++ * x[j];
        s += 0.5 * w[i] * y * y;
    }
    return s;
}

__attribute__((noinline)) static double rows_of_copy(const double *x, const double *c, int n) {
    int total = n * (n + 1) / 2;
    double *buf = malloc((size_t)total * sizeof(double));
    for (int k = 0; k < total; k++)
        buf[k] = x[k % n] * (1.0 + 0.1 * k);
    double s = 0.0;
    const double *row = buf;
    for (int i = 0; i < n; i++) {
        double r = 0.0;
        for (int j = 0; j <= i; j++)
            r += sin(row[j]);
        row += i + 1;
        s += c[i] * r * r;
    }
    free(buf);
    return s;
}

__attribute__((noinline)) static double either_array(const double *a, const double *b, const double *x, int n) {
    double s = 0.0;
    const double *pa = a, *pb = b;
    for (int i = 0; i < n; i++) {
        const double *row = (i & 1) ? pa : pb;
        double y = 0.0;
        for (int j = 0; j <= i; j++)
            y += row[j] * x[j];
        pa += i + 1;
        pb += i + 1;
        s += 0.5 * y * y;
    }
    return s;
}

static void check_packed_lower(int n, int total) {
    double *l = malloc((size_t)total * sizeof(double)), *dl = calloc((size_t)total, sizeof(double));
    double *x = malloc((size_t)n * sizeof(double)), *dx = calloc((size_t)n, sizeof(double));
    double *w = malloc((size_t)n * sizeof(double)), *y = malloc((size_t)n * sizeof(double));
    for (int k = 0; k < total; k++) l[k] = 0.3 + 0.2 * cos(0.7 * k);
    for (int j = 0; j < n; j++) x[j] = 0.5 + 0.4 * sin(1.1 * j), w[j] = 1.0 + 0.1 * j;
    __enzyme_autodiff((void *)packed_lower, enzyme_dup, l, dl, enzyme_dup, x, dx, enzyme_const, w, enzyme_const, n);
    for (int i = 0, k = 0; i < n; i++) {
        y[i] = 0.0;
        for (int j = 0; j <= i; j++) y[i] += l[k++] * x[j];
    }
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j <= i; j++, k++) check("packed.dL", k, dl[k], w[i] * y[i] * x[j]);
    for (int j = 0; j < n; j++) {
        double want = 0.0;
        for (int i = j; i < n; i++) want += l[i * (i + 1) / 2 + j] * w[i] * y[i];
        check("packed.dx", j, dx[j], want);
    }
    double *tl = malloc((size_t)total * sizeof(double)), *tx = malloc((size_t)n * sizeof(double));
    double dot = 0.0;
    for (int k = 0; k < total; k++) tl[k] = sin(0.3 * k), dot += tl[k] * dl[k];
    for (int j = 0; j < n; j++) tx[j] = cos(0.5 * j), dot += tx[j] * dx[j];
    check("packed fwd", 0,
          __enzyme_fwddiff((void *)packed_lower, enzyme_dup, l, tl, enzyme_dup, x, tx, enzyme_const, w,
                           enzyme_const, n),
          dot);
    free(l), free(dl), free(x), free(dx), free(w), free(y), free(tl), free(tx);
}

static void check_rows_of_copy(int n, int total) {
    double *x = malloc((size_t)n * sizeof(double)), *dx = calloc((size_t)n, sizeof(double));
    double *c = malloc((size_t)n * sizeof(double)), *r = calloc((size_t)n, sizeof(double));
    for (int j = 0; j < n; j++) x[j] = 0.2 + 0.1 * j, c[j] = 0.5 + 0.25 * j;
    __enzyme_autodiff((void *)rows_of_copy, enzyme_dup, x, dx, enzyme_const, c, enzyme_const, n);
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j <= i; j++, k++) r[i] += sin(x[k % n] * (1.0 + 0.1 * k));
    double *want = calloc((size_t)n, sizeof(double));
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j <= i; j++, k++) {
            double scale = 1.0 + 0.1 * k;
            want[k % n] += 2.0 * c[i] * r[i] * cos(x[k % n] * scale) * scale;
        }
    for (int j = 0; j < n; j++) check("rows.dx", j, dx[j], want[j]);
    double *tx = malloc((size_t)n * sizeof(double)), dot = 0.0;
    for (int j = 0; j < n; j++) tx[j] = sin(0.8 * j + 0.1), dot += tx[j] * dx[j];
    check("rows fwd", 0,
          __enzyme_fwddiff((void *)rows_of_copy, enzyme_dup, x, tx, enzyme_const, c, enzyme_const, n), dot);
    (void)total;
    free(x), free(dx), free(c), free(r), free(want), free(tx);
}

static void check_either_array(int n, int total) {
    double *a = malloc((size_t)total * sizeof(double)), *da = calloc((size_t)total, sizeof(double));
    double *b = malloc((size_t)total * sizeof(double)), *db = calloc((size_t)total, sizeof(double));
    double *x = malloc((size_t)n * sizeof(double)), *dx = calloc((size_t)n, sizeof(double));
    for (int k = 0; k < total; k++) a[k] = 0.1 * (k % 5) - 0.2, b[k] = 0.4 - 0.05 * (k % 7);
    for (int j = 0; j < n; j++) x[j] = 1.0 - 0.15 * j;
    __enzyme_autodiff((void *)either_array, enzyme_dup, a, da, enzyme_dup, b, db, enzyme_dup, x, dx, enzyme_const, n);
    double *wantx = calloc((size_t)n, sizeof(double));
    for (int i = 0, k = 0; i < n; i++) {
        const double *row = ((i & 1) ? a : b) + k;
        double y = 0.0;
        for (int j = 0; j <= i; j++) y += row[j] * x[j];
        for (int j = 0; j <= i; j++, k++) {
            check((i & 1) ? "either.da" : "either.db", k, (i & 1) ? da[k] : db[k], y * x[j]);
            check((i & 1) ? "either.db" : "either.da", k, (i & 1) ? db[k] : da[k], 0.0);
            wantx[j] += y * row[j];
        }
    }
    for (int j = 0; j < n; j++) check("either.dx", j, dx[j], wantx[j]);
    double *ta = malloc((size_t)total * sizeof(double)), *tb = malloc((size_t)total * sizeof(double));
    double *tx = malloc((size_t)n * sizeof(double)), dot = 0.0;
    for (int k = 0; k < total; k++) ta[k] = cos(0.2 * k), tb[k] = sin(0.4 * k), dot += ta[k] * da[k] + tb[k] * db[k];
    for (int j = 0; j < n; j++) tx[j] = 0.3 * j - 0.5, dot += tx[j] * dx[j];
    check("either fwd", 0,
          __enzyme_fwddiff((void *)either_array, enzyme_dup, a, ta, enzyme_dup, b, tb, enzyme_dup, x, tx,
                           enzyme_const, n),
          dot);
    free(a), free(da), free(b), free(db), free(x), free(dx), free(wantx), free(ta), free(tb), free(tx);
}

int main(int argc, char **argv) {
    (void)argv;
    int sizes[] = {1, 2, 5 + argc}; /* one row, two rows, several (not a compile-time constant) */
    for (int s = 0; s < 3; s++) {
        int n = sizes[s], total = n * (n + 1) / 2;
        check_packed_lower(n, total);
        check_rows_of_copy(n, total);
        check_either_array(n, total);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
