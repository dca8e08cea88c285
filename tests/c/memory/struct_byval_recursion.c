/* Recursion over structs passed by value (issue 23 item 1): a tiled matrix product
   recursing on quadrant descriptors { double *data; int rows, cols, stride; } down to a
   naive kernel, loss = sum C^2, and a weighted sum of squares recursing on halves of a
   { double *x; double w; int n; } descriptor whose double field is active (a struct of
   a pointer and a double copied whole). At -O1 and up
   LLVM turns the last recursive call into a loop that copies the next descriptor into
   the callee's own by-value parameter; zymase used to let that copy overwrite the
   caller's struct and to zero the shadow pointers of copied structs (segfault, or zero
   gradients). Reverse and forward against closed forms. */
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

typedef struct { double *data; int rows, cols, stride; } mat;

static mat block(mat m, int r0, int c0, int rows, int cols) {
    mat b = { m.data + r0 * m.stride + c0, rows, cols, m.stride };
    return b;
}

/* C += A B, naive */
static void kernel(mat A, mat B, mat C) {
    for (int i = 0; i < C.rows; i++)
        for (int j = 0; j < C.cols; j++) {
            double s = 0.0;
            for (int k = 0; k < A.cols; k++)
                s += A.data[i * A.stride + k] * B.data[k * B.stride + j];
            C.data[i * C.stride + j] += s;
        }
}

/* C += A B by quadrants until a side is small */
static void tiled(mat A, mat B, mat C) {
    if (C.rows <= 2 || C.cols <= 2 || A.cols <= 2) {
        kernel(A, B, C);
        return;
    }
    int m = C.rows / 2, n = C.cols / 2, k = A.cols / 2;
    mat A00 = block(A, 0, 0, m, k), A01 = block(A, 0, k, m, A.cols - k);
    mat A10 = block(A, m, 0, C.rows - m, k), A11 = block(A, m, k, C.rows - m, A.cols - k);
    mat B00 = block(B, 0, 0, k, n), B01 = block(B, 0, n, k, C.cols - n);
    mat B10 = block(B, k, 0, A.cols - k, n), B11 = block(B, k, n, A.cols - k, C.cols - n);
    mat C00 = block(C, 0, 0, m, n), C01 = block(C, 0, n, m, C.cols - n);
    mat C10 = block(C, m, 0, C.rows - m, n), C11 = block(C, m, n, C.rows - m, C.cols - n);
    tiled(A00, B00, C00); tiled(A01, B10, C00);
    tiled(A00, B01, C01); tiled(A01, B11, C01);
    tiled(A10, B00, C10); tiled(A11, B10, C10);
    tiled(A10, B01, C11); tiled(A11, B11, C11);
}

/* sum (A B)^2 over a malloc'd C */
static double product_energy(double *a, double *b, int n) {
    double *c = calloc((size_t)(n * n), sizeof(double));
    mat A = { a, n, n, n }, B = { b, n, n, n }, C = { c, n, n, n };
    tiled(A, B, C);
    double s = 0.0;
    for (int i = 0; i < n * n; i++) s += c[i] * c[i];
    free(c);
    return s;
}

typedef struct { double *x; double w; int n; } seg;

/* *out += w * sum x^2 at the leaves; the left half's weight is scaled by 1.25, the
   right's by 0.75 (the second call is a tail call: a loop copying `right` into `s`) */
static void weighted(seg s, double *out) {
    if (s.n <= 2) {
        double t = 0.0;
        for (int i = 0; i < s.n; i++) t += s.x[i] * s.x[i];
        *out += s.w * t;
        return;
    }
    int h = s.n / 2;
    seg left = { s.x, 1.25 * s.w, h }, right = { s.x + h, 0.75 * s.w, s.n - h };
    weighted(left, out);
    weighted(right, out);
}

static double weighted_top(double *x, double w, int n) {
    seg s = { x, w, n };
    double acc = 0.0;
    weighted(s, &acc);
    return acc;
}

/* the weight factor of each leaf element (not differentiated) */
static void leaf_factors(double *c, double f, int n) {
    if (n <= 2) {
        for (int i = 0; i < n; i++) c[i] = f;
        return;
    }
    int h = n / 2;
    leaf_factors(c, 1.25 * f, h);
    leaf_factors(c + h, 0.75 * f, n - h);
}

#define NMAX 16

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 6; /* 7: odd, so quadrants are uneven */
    double a[NMAX * NMAX], b[NMAX * NMAX], da[NMAX * NMAX], db[NMAX * NMAX], c[NMAX * NMAX];
    double ta[NMAX * NMAX], tb[NMAX * NMAX];
    for (int i = 0; i < n * n; i++) {
        a[i] = sin(0.3 * i + 0.1);
        b[i] = cos(0.2 * i) - 0.25;
        ta[i] = 0.5 - 0.01 * i;
        tb[i] = cos(0.7 * i);
        da[i] = db[i] = 0.0;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int k = 0; k < n; k++) s += a[i * n + k] * b[k * n + j];
            c[i * n + j] = s;
        }

    /* d/dA = 2 C B^T, d/dB = 2 A^T C */
    __enzyme_autodiff((void *)product_energy, enzyme_dup, a, da, enzyme_dup, b, db, enzyme_const, n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            double wa = 0.0, wb = 0.0;
            for (int j = 0; j < n; j++) {
                wa += 2.0 * c[i * n + j] * b[k * n + j];
                wb += 2.0 * a[j * n + i] * c[j * n + k];
            }
            check("tiled d/dA", i * n + k, da[i * n + k], wa, TOL);
            check("tiled d/dB", i * n + k, db[i * n + k], wb, TOL);
        }
    /* forward: 2 sum C .* (tA B + A tB) */
    double want = 0.0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double t = 0.0;
            for (int k = 0; k < n; k++) t += ta[i * n + k] * b[k * n + j] + a[i * n + k] * tb[k * n + j];
            want += 2.0 * c[i * n + j] * t;
        }
    check("tiled forward", n, __enzyme_fwddiff((void *)product_energy, enzyme_dup, a, ta, enzyme_dup, b, tb,
                                               enzyme_const, n), want, TOL);

    /* weighted: f = w sum f_i x_i^2; df/dx_i = 2 w f_i x_i, df/dw = sum f_i x_i^2 */
    int m = 4 * argc + 7; /* 11 */
    double x[NMAX], dx[NMAX], tx[NMAX], f[NMAX], w = 0.8;
    leaf_factors(f, 1.0, m);
    double dw_want = 0.0, fwd = 0.0;
    for (int i = 0; i < m; i++) {
        x[i] = 0.2 * i - 0.7;
        dx[i] = 0.0;
        tx[i] = 1.0 - 0.05 * i;
        dw_want += f[i] * x[i] * x[i];
    }
    double dw = __enzyme_autodiff((void *)weighted_top, enzyme_dup, x, dx, w, m);
    check("weighted d/dw", w, dw, dw_want, TOL);
    for (int i = 0; i < m; i++) {
        check("weighted d/dx", i, dx[i], 2.0 * w * f[i] * x[i], TOL);
        fwd += 2.0 * w * f[i] * x[i] * tx[i];
    }
    fwd += 0.3 * dw_want;
    check("weighted forward", m, __enzyme_fwddiff((void *)weighted_top, enzyme_dup, x, tx, w, 0.3, m), fwd, TOL);

    printf("%d failure(s)\n", failures);
    return failures != 0;
}
