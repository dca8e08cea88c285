/* FFT of n complex values (separate real and imaginary arrays, n a power of two): radix-4
   decimation in frequency, in place. Objective = sum_k w_k |X_k|^2; gradient w.r.t. the real and
   imaginary input arrays (dup), with a shadow workspace (dup: the passes write it); the
   weights, twiddles and bit-reversal tables are const.

   Layout: the input is copied into the caller's workspace as rows of ROW values, each row PAD
   values after the previous one. The first passes combine whole rows (the stages whose half-size
   is at least a row): their four streams are a power of two rows apart, and the padding puts
   them in different cache sets (without it the eight streams of a pass share one set and evict
   each other). The remaining stages run row by row, in L1. Every pass updates its elements in
   place through restrict pointers to its four streams, so the reverse of a pass reads each
   adjoint and writes it back once (zymase keeps the restrict promise of the inlined callee).
   Radix 4 halves the passes over memory; two radix-2 stages in one pass, same arithmetic.

   The transform leaves X_k in bit-reversed order: row r, position rev_row[c] holds X_k for
   k = c * rows + rev_rows[r] (rev_row, rev_rows: bit reversals of the row length and of the
   row count). The objective reads each row through rev_row, in L1-sized pieces, and the
   weights in order with a stride of rows: the same sum, term by term, without moving data.
   (Reading the weights through a bit reversal instead, w[rev(p)] for p in order, sends
   consecutive loads to addresses that differ by large powers of two, which share cache sets:
   it costs more than the whole sum.) The twiddles exp(-pi i j / l), j < l, are at entries
   l-1 .. 2l-2 of the tables, computed once per size outside the timed and differentiated
   code, like the plan FFTW and pocketfft (JAX's FFT) keep; so are the bit-reversal tables.
   The workspace is the caller's, as FFTW's plans and JAX's compiled functions keep theirs,
   so no call allocates.
   Usage: fft [n]   (default 1024) */
#include "bench_common.h"

#define ROW 1024 /* values per row: a row's passes stay in L1 (16 KB of the 32) */
#define PAD 8    /* a row starts PAD values (one cache line) after the previous one ends */
#define RS (ROW + PAD)

/* One radix-4 step in place on four streams of m values: the stages of half-sizes s and s/2
   (twiddles u = exp(-pi i j / s), z = exp(-2 pi i j / s); the one for j + s/2 is -i u). */
static void radix4(double *restrict a0r, double *restrict a0i, double *restrict a1r, double *restrict a1i,
                   double *restrict a2r, double *restrict a2i, double *restrict a3r, double *restrict a3i,
                   const double *restrict ur, const double *restrict ui, const double *restrict zr,
                   const double *restrict zi, int m) {
    for (int j = 0; j < m; j++) {
        double x0r = a0r[j], x0i = a0i[j], x1r = a1r[j], x1i = a1i[j];
        double x2r = a2r[j], x2i = a2i[j], x3r = a3r[j], x3i = a3i[j];
        double y0r = x0r + x2r, y0i = x0i + x2i, y1r = x1r + x3r, y1i = x1i + x3i;
        double d0r = x0r - x2r, d0i = x0i - x2i, d1r = x1r - x3r, d1i = x1i - x3i;
        double y2r = d0r * ur[j] - d0i * ui[j], y2i = d0r * ui[j] + d0i * ur[j];
        double y3r = d1r * ui[j] + d1i * ur[j], y3i = d1i * ui[j] - d1r * ur[j];
        double e0r = y0r - y1r, e0i = y0i - y1i, e1r = y2r - y3r, e1i = y2i - y3i;
        a0r[j] = y0r + y1r;
        a0i[j] = y0i + y1i;
        a1r[j] = e0r * zr[j] - e0i * zi[j];
        a1i[j] = e0r * zi[j] + e0i * zr[j];
        a2r[j] = y2r + y3r;
        a2i[j] = y2i + y3i;
        a3r[j] = e1r * zr[j] - e1i * zi[j];
        a3i[j] = e1r * zi[j] + e1i * zr[j];
    }
}

/* radix4 on [o, o + 4q) with stride-q streams, twiddles for half-size s = 2q at offset t */
static void step4(double *xr, double *xi, const double *tr, const double *ti, long o, long q, int s, int t, int m) {
    radix4(xr + o, xi + o, xr + o + q, xi + o + q, xr + o + 2 * q, xi + o + 2 * q, xr + o + 3 * q, xi + o + 3 * q,
           tr + s - 1 + t, ti + s - 1 + t, tr + s / 2 - 1 + t, ti + s / 2 - 1 + t, m);
}

/* one radix-2 step in place on two streams (used when log2 of the row count is odd) */
static void radix2(double *restrict ar, double *restrict ai, double *restrict br, double *restrict bi,
                   const double *restrict ur, const double *restrict ui, int m) {
    for (int j = 0; j < m; j++) {
        double xr = ar[j], xi = ai[j], yr = br[j], yi = bi[j];
        double dr = xr - yr, di = xi - yi;
        ar[j] = xr + yr;
        ai[j] = xi + yi;
        br[j] = dr * ur[j] - di * ui[j];
        bi[j] = dr * ui[j] + di * ur[j];
    }
}

/* the last two stages of a row: twiddles 1 and -i */
static void last4(double *restrict xr, double *restrict xi, int len) {
    for (int b = 0; b < len; b += 4) {
        double x0r = xr[b], x0i = xi[b], x1r = xr[b + 1], x1i = xi[b + 1];
        double x2r = xr[b + 2], x2i = xi[b + 2], x3r = xr[b + 3], x3i = xi[b + 3];
        double y0r = x0r + x2r, y0i = x0i + x2i, y1r = x1r + x3r, y1i = x1i + x3i;
        double y2r = x0r - x2r, y2i = x0i - x2i, y3r = x1i - x3i, y3i = x3r - x1r;
        xr[b] = y0r + y1r;
        xi[b] = y0i + y1i;
        xr[b + 1] = y0r - y1r;
        xi[b + 1] = y0i - y1i;
        xr[b + 2] = y2r + y3r;
        xi[b + 2] = y2i + y3i;
        xr[b + 3] = y2r - y3r;
        xi[b + 3] = y2i - y3i;
    }
}

static void last2(double *restrict xr, double *restrict xi, int len) {
    for (int b = 0; b < len; b += 2) {
        double ar = xr[b], ai = xi[b], cr = xr[b + 1], ci = xi[b + 1];
        xr[b] = ar + cr;
        xi[b] = ai + ci;
        xr[b + 1] = ar - cr;
        xi[b + 1] = ai - ci;
    }
}

double fft_objective(const double *restrict re_in, const double *restrict im_in,
                     const double *restrict w, const double *restrict tw_re,
                     const double *restrict tw_im, const int *restrict rev_row,
                     const int *restrict rev_rows,
                     double *restrict xr, double *restrict xi, int n) {
    int len = n < ROW ? n : ROW, rows = n / len;
    int lr = __builtin_ctz(rows), ll = __builtin_ctz(len); /* log2 */
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < len; c++) {
            xr[(long)r * RS + c] = re_in[r * len + c];
            xi[(long)r * RS + c] = im_in[r * len + c];
        }
    /* stages whose half-size is a whole number of rows, two at a time */
    for (int t = 0; t < lr / 2; t++) {
        int qr = rows >> (2 * t + 2), groups = 1 << 2 * t;
        for (int g = 0; g < groups; g++)
            for (int jr = 0; jr < qr; jr++)
                step4(xr, xi, tw_re, tw_im, (long)(4 * g * qr + jr) * RS, (long)qr * RS, 2 * qr * len, jr * len, len);
    }
    if (lr % 2)
        for (int g = 0; g < rows / 2; g++)
            radix2(xr + (long)2 * g * RS, xi + (long)2 * g * RS, xr + (long)(2 * g + 1) * RS,
                   xi + (long)(2 * g + 1) * RS, tw_re + len - 1, tw_im + len - 1, len);
    /* the stages inside each row */
    for (int r = 0; r < rows; r++) {
        double *rr = xr + (long)r * RS, *ri = xi + (long)r * RS;
        for (int t = 0; t < (ll - 1) / 2; t++) {
            int q = len >> (2 * t + 2), groups = 1 << 2 * t;
            for (int g = 0; g < groups; g++)
                step4(rr, ri, tw_re, tw_im, (long)4 * g * q, q, 2 * q, 0, q);
        }
        if (ll % 2)
            last2(rr, ri, len);
        else
            last4(rr, ri, len);
    }
    /* position rev_row[c] of row r holds X_k for k = c * rows + rev_rows[r] */
    double s = 0.0;
    for (int r = 0; r < rows; r++) {
        const double *rr = xr + (long)r * RS, *ri = xi + (long)r * RS, *wr = w + rev_rows[r];
        for (int c = 0; c < len; c++) {
            int p = rev_row[c];
            s += wr[(long)c * rows] * (rr[p] * rr[p] + ri[p] * ri[p]);
        }
    }
    return s;
}

struct ctx {
    int n;
    double *re, *im, *dre, *dim, *w, *tw_re, *tw_im, *xr, *xi, *dxr, *dxi;
    int *rev_row, *rev_rows;
    double sink;
};

static void run_primal(void *p) {
    struct ctx *c = p;
    c->sink +=
        fft_objective(c->re, c->im, c->w, c->tw_re, c->tw_im, c->rev_row, c->rev_rows, c->xr, c->xi, c->n);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    memset(c->dre, 0, sizeof(double) * (size_t)c->n);
    memset(c->dim, 0, sizeof(double) * (size_t)c->n);
    __enzyme_autodiff((void *)fft_objective, enzyme_dup, c->re, c->dre, enzyme_dup, c->im, c->dim,
                      enzyme_const, c->w, enzyme_const, c->tw_re, enzyme_const, c->tw_im, enzyme_const, c->rev_row,
                      enzyme_const, c->rev_rows,
                      enzyme_dup, c->xr, c->dxr, enzyme_dup, c->xi, c->dxi, enzyme_const, c->n);
}

static double eval(void *p) {
    struct ctx *c = p;
    return fft_objective(c->re, c->im, c->w, c->tw_re, c->tw_im, c->rev_row, c->rev_rows, c->xr, c->xi, c->n);
}

/* rev[k] = k with its log2(m) bits reversed */
static void bit_reversal(int *rev, int m) {
    int bits = __builtin_ctz(m);
    for (int k = 0; k < m; k++) {
        int r = 0;
        for (int b = 0; b < bits; b++)
            r |= (k >> b & 1) << (bits - 1 - b);
        rev[k] = r;
    }
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n < 4 || (n & (n - 1))) {
        fprintf(stderr, "fft: n must be a power of two >= 4\n");
        return 2;
    }
    struct ctx c = {.n = n};
    int len = n < ROW ? n : ROW;
    size_t ws = (size_t)(n / len) * RS;
    c.re = bench_alloc((size_t)n, sizeof(double));
    c.im = bench_alloc((size_t)n, sizeof(double));
    c.dre = bench_alloc((size_t)n, sizeof(double));
    c.dim = bench_alloc((size_t)n, sizeof(double));
    c.w = bench_alloc((size_t)n, sizeof(double));
    c.xr = bench_alloc(ws, sizeof(double));
    c.xi = bench_alloc(ws, sizeof(double));
    c.dxr = bench_alloc(ws, sizeof(double));
    c.dxi = bench_alloc(ws, sizeof(double));
    c.tw_re = bench_alloc((size_t)n - 1, sizeof(double));
    c.tw_im = bench_alloc((size_t)n - 1, sizeof(double));
    for (int l = 1; l < n; l *= 2)
        for (int j = 0; j < l; j++) {
            c.tw_re[l - 1 + j] = cos(-BENCH_PI * j / l);
            c.tw_im[l - 1 + j] = sin(-BENCH_PI * j / l);
        }
    c.rev_row = bench_alloc((size_t)len, sizeof(int));
    c.rev_rows = bench_alloc((size_t)(n / len), sizeof(int));
    bit_reversal(c.rev_row, len);
    bit_reversal(c.rev_rows, n / len);
    bench_seed(5);
    for (int i = 0; i < n; i++) {
        c.re[i] = 2.0 * bench_uniform() - 1.0;
        c.im[i] = 2.0 * bench_uniform() - 1.0;
        c.w[i] = bench_uniform();
    }
    struct bench_workload wl = {.name = "fft", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(wl.size, sizeof wl.size, "n=%d", n);
    bench_add(&wl, "re", 'd', c.re, n, c.dre, 5);
    bench_add(&wl, "im", 'd', c.im, n, c.dim, 5);
    bench_add(&wl, "w", 'd', c.w, n, NULL, 0);
    return bench_run(&wl);
}
