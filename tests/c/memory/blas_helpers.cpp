// BLAS-like C++ helpers (daxpy, ddot, dscal) taking several pointers, called from a
// conjugate-gradient solve and a power iteration, with scratch from new[], and
// std::vectors passed by const reference (issue 23 item 2): forward and reverse mode.
// zymase used to fail on C++ here: operator new[] was not known as an allocator
// (active data in it had no shadow), the link lacked libstdc++, and any std::vector
// brought in exception handling (invoke) that zymase does not read.
// Every derivative is compared with a central finite difference along the same
// direction (reverse: the gradient dotted with it), tolerance 1e-6.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" {
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;
}

static int failures;

// Passes when |got - want| <= tol * max(1, |want|); a NaN never passes.
static void check(const char *what, double at, double got, double want, double tol) {
    double scale = std::fabs(want) > 1.0 ? std::fabs(want) : 1.0;
    int ok = std::fabs(got - want) <= tol * scale;
    failures += !ok;
    std::printf("%-4s %-32s at %-12.6g got %-24.17g want %-24.17g tol %.0e\n",
                ok ? "ok" : "FAIL", what, at, got, want, tol);
}

#define FDTOL 1e-6

void daxpy(int n, double a, const double *x, double *y) {
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

double ddot(int n, const double *x, const double *y) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

void dscal(int n, double a, double *x) {
    for (int i = 0; i < n; i++) x[i] *= a;
}

void dgemv(int n, const double *A, const double *x, double *y) {
    for (int i = 0; i < n; i++) y[i] = ddot(n, A + i * n, x);
}

// `iters` conjugate-gradient steps on A x = b from x = 0 (scratch from new[]); returns x.x
double cg(const double *A, const double *b, double *x, int n, int iters) {
    double *r = new double[n], *p = new double[n], *Ap = new double[n];
    for (int i = 0; i < n; i++) {
        x[i] = 0.0;
        r[i] = b[i];
        p[i] = b[i];
    }
    double rr = ddot(n, r, r);
    for (int k = 0; k < iters; k++) {
        dgemv(n, A, p, Ap);
        double alpha = rr / ddot(n, p, Ap);
        daxpy(n, alpha, p, x);
        daxpy(n, -alpha, Ap, r);
        double next = ddot(n, r, r);
        dscal(n, next / rr, p);
        daxpy(n, 1.0, r, p);
        rr = next;
    }
    double s = ddot(n, x, x);
    delete[] r;
    delete[] p;
    delete[] Ap;
    return s;
}

// `iters` normalized power steps from v0 (two new[] buffers swapped); the Rayleigh quotient
double rayleigh(const double *A, const double *v0, int n, int iters) {
    double *v = new double[n], *w = new double[n];
    for (int i = 0; i < n; i++) v[i] = v0[i];
    for (int k = 0; k < iters; k++) {
        dgemv(n, A, v, w);
        dscal(n, 1.0 / std::sqrt(ddot(n, w, w)), w);
        double *t = v;
        v = w;
        w = t;
    }
    dgemv(n, A, v, w);
    double q = ddot(n, v, w) / ddot(n, v, v);
    delete[] v;
    delete[] w;
    return q;
}

// x.y / |y| with both vectors passed by const reference
double projection(const std::vector<double> &x, const std::vector<double> &y) {
    int n = (int)x.size();
    return ddot(n, x.data(), y.data()) / std::sqrt(ddot(n, y.data(), y.data()));
}

#define NMAX 8

int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 4; // 5
    int iters = argc + 2; // 3
    double A[NMAX * NMAX], tA[NMAX * NMAX], dA[NMAX * NMAX], b[NMAX], tb[NMAX], db[NMAX];
    double x[NMAX], dx[NMAX], Ah[NMAX * NMAX], bh[NMAX];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            A[i * n + j] = (i == j ? 4.0 + i : 0.0) + 0.3 / (1 + i + j);  // symmetric positive definite
            tA[i * n + j] = 0.02 * (i + j) - 0.05;
            dA[i * n + j] = 0.0;
        }
    for (int i = 0; i < n; i++) {
        b[i] = 1.0 + 0.1 * i;
        tb[i] = 0.3 - 0.05 * i;
        db[i] = dx[i] = 0.0;
    }
    const double h = 1e-5;

    // cg: central difference along (tA, tb)
    for (int i = 0; i < n * n; i++) Ah[i] = A[i] + h * tA[i];
    for (int i = 0; i < n; i++) bh[i] = b[i] + h * tb[i];
    double up = cg(Ah, bh, x, n, iters);
    for (int i = 0; i < n * n; i++) Ah[i] = A[i] - h * tA[i];
    for (int i = 0; i < n; i++) bh[i] = b[i] - h * tb[i];
    double fd = (up - cg(Ah, bh, x, n, iters)) / (2 * h);
    double tx[NMAX];
    double fwd = __enzyme_fwddiff((void *)cg, enzyme_dup, A, tA, enzyme_dup, b, tb, enzyme_dup, x, tx,
                                  enzyme_const, n, enzyme_const, iters);
    check("cg forward", iters, fwd, fd, FDTOL);
    __enzyme_autodiff((void *)cg, enzyme_dup, A, dA, enzyme_dup, b, db, enzyme_dup, x, dx,
                      enzyme_const, n, enzyme_const, iters);
    double dir = 0.0;
    for (int i = 0; i < n * n; i++) dir += dA[i] * tA[i];
    for (int i = 0; i < n; i++) dir += db[i] * tb[i];
    check("cg reverse . direction", iters, dir, fd, FDTOL);

    // rayleigh: along (tA, tb) with b as the start vector
    for (int i = 0; i < n * n; i++) { Ah[i] = A[i] + h * tA[i]; dA[i] = 0.0; }
    for (int i = 0; i < n; i++) { bh[i] = b[i] + h * tb[i]; db[i] = 0.0; }
    up = rayleigh(Ah, bh, n, iters);
    for (int i = 0; i < n * n; i++) Ah[i] = A[i] - h * tA[i];
    for (int i = 0; i < n; i++) bh[i] = b[i] - h * tb[i];
    fd = (up - rayleigh(Ah, bh, n, iters)) / (2 * h);
    fwd = __enzyme_fwddiff((void *)rayleigh, enzyme_dup, A, tA, enzyme_dup, b, tb, enzyme_const, n,
                           enzyme_const, iters);
    check("rayleigh forward", iters, fwd, fd, FDTOL);
    __enzyme_autodiff((void *)rayleigh, enzyme_dup, A, dA, enzyme_dup, b, db, enzyme_const, n,
                      enzyme_const, iters);
    dir = 0.0;
    for (int i = 0; i < n * n; i++) dir += dA[i] * tA[i];
    for (int i = 0; i < n; i++) dir += db[i] * tb[i];
    check("rayleigh reverse . direction", iters, dir, fd, FDTOL);

    // projection: closed form d/dx = y/|y|, d/dy = x/|y| - (x.y) y/|y|^3
    std::vector<double> xv(n), yv(n), dxv(n, 0.0), dyv(n, 0.0), txv(n), tyv(n);
    for (int i = 0; i < n; i++) {
        xv[i] = std::sin(0.7 * i) + 0.2;
        yv[i] = 1.0 + 0.25 * i;
        txv[i] = 0.1 * i;
        tyv[i] = 0.5 - 0.1 * i;
    }
    double xy = 0.0, yy = 0.0;
    for (int i = 0; i < n; i++) { xy += xv[i] * yv[i]; yy += yv[i] * yv[i]; }
    double ny = std::sqrt(yy), want = 0.0;
    __enzyme_autodiff((void *)projection, enzyme_dup, &xv, &dxv, enzyme_dup, &yv, &dyv);
    for (int i = 0; i < n; i++) {
        double wx = yv[i] / ny, wy = xv[i] / ny - xy * yv[i] / (yy * ny);
        check("projection d/dx", i, dxv[i], wx, 1e-8);
        check("projection d/dy", i, dyv[i], wy, 1e-8);
        want += wx * txv[i] + wy * tyv[i];
    }
    check("projection forward", n, __enzyme_fwddiff((void *)projection, enzyme_dup, &xv, &txv, enzyme_dup, &yv, &tyv),
          want, 1e-8);

    std::printf("%d failure(s)\n", failures);
    return failures != 0;
}
