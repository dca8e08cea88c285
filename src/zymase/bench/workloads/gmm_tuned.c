/* GMM, TUNED VARIANT: the objective of gmm.c (ADBench's reference form, which the headline
   comparisons use) restructured for speed; `zymase bench` shows it beside gmm.c, labelled
   as tuned. ADBench's Gaussian mixture model objective (negative log-likelihood of n points
   under K d-dimensional Gaussians plus a Wishart prior), gradient w.r.t. alphas, means and icf.
   Component k has precision Q_k^T Q_k, where Q_k is lower triangular with diagonal
   exp(icf_k[0..d-1]) and strictly lower part icf_k[d..] stored column by column.
     E = -n d/2 log(2 pi) + sum_i logsumexp_k(alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2)
         - n logsumexp(alpha) + sum_k (gamma^2/2 (|exp(q_k)|^2 + |L_k|^2) - m sum(q_k)) - K C
   with C = N d (log gamma - log(2)/2) - log Gamma_d(N/2), N = d + m + 1.

   Computes exactly ADBench's Q_k (x_i - mu_k) (only the order of the additions inside each
   row's dot product differs), organised for speed:
   - Q_k is copied once per component into a packed row-major lower triangle (diagonal
     exp(q_k) included), so row r of Q_k (x - mu_k) is a contiguous dot product, summed with
     reassociation allowed (it vectorizes);
   - points are processed in blocks of 6 per component (6 accumulators: each element of Q_k
     is loaded once per 6 points, and the gradient's adjoint of it updated once per 6), with a
     one-point path for the n % 6 points left over (against blocks of 4 and 8: the gradient
     was fastest with 6, or tied, at each of five sizes measured, n = 1000, SSE2 and AVX-512);
   - x - mu_k is formed inside the dot product (x_b[c] - mu[c]), not stored in a scratch
     buffer: the reverse loop then updates the means' adjoint once per block (one
     read-modify-write stream: dmu[c] -= q[c] * sum_b da_b), where a scratch per point would
     give it one stream per point, and x and the means are read again, not taped. The
     gradient tapes d values per point and component (the rows of Q (x - mu)), half the
     original's 2d.
   Usage: gmm_tuned FILE   (an ADBench gmm_d{D}_K{K}.txt file; `zymase bench` writes them) */
#include "bench_common.h"

static double logsumexp(const double *restrict v, int n) {
    double mx = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > mx) mx = v[i];
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += exp(v[i] - mx);
    return log(s) + mx;
}

/* log of the multivariate gamma function Gamma_p(a) */
static double log_gamma_distrib(double a, int p) {
    double r = 0.25 * p * (p - 1) * log(BENCH_PI);
    for (int j = 1; j <= p; j++)
        r += lgamma(a + 0.5 * (1 - j));
    return r;
}

/* sq[b] = |Q_k (x_b - mu_k)|^2 for the 6 points x_b = xb + b*d, with Q packed row by row
   (row r: Q_r0 .. Q_rr, starting at r(r+1)/2). Row r of Q (x_b - mu) is a dot product; the order of
   its additions is left to the compiler (reassociation) so that it vectorizes. */
static void sqnorm6(int d, const double *restrict Q, const double *restrict mu, const double *restrict xb,
                    double *restrict sq) {
    const double *x0 = xb, *x1 = xb + d, *x2 = xb + 2 * d, *x3 = xb + 3 * d, *x4 = xb + 4 * d, *x5 = xb + 5 * d;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0;
    for (int r = 0; r < d; r++) {
        const double *q = Q + r * (r + 1) / 2;
        double a0 = 0.0, a1 = 0.0, a2 = 0.0, a3 = 0.0, a4 = 0.0, a5 = 0.0;
        for (int c = 0; c <= r; c++) {
#pragma clang fp reassociate(on)
            a0 += q[c] * (x0[c] - mu[c]);
            a1 += q[c] * (x1[c] - mu[c]);
            a2 += q[c] * (x2[c] - mu[c]);
            a3 += q[c] * (x3[c] - mu[c]);
            a4 += q[c] * (x4[c] - mu[c]);
            a5 += q[c] * (x5[c] - mu[c]);
        }
        s0 += a0 * a0;
        s1 += a1 * a1;
        s2 += a2 * a2;
        s3 += a3 * a3;
        s4 += a4 * a4;
        s5 += a5 * a5;
    }
    sq[0] = s0;
    sq[1] = s1;
    sq[2] = s2;
    sq[3] = s3;
    sq[4] = s4;
    sq[5] = s5;
}

/* sqnorm6 for one point (the n % 6 points left over) */
static double sqnorm1(int d, const double *restrict Q, const double *restrict mu, const double *restrict x0) {
    double s0 = 0.0;
    for (int r = 0; r < d; r++) {
        const double *q = Q + r * (r + 1) / 2;
        double a0 = 0.0;
        for (int c = 0; c <= r; c++) {
#pragma clang fp reassociate(on)
            a0 += q[c] * (x0[c] - mu[c]);
        }
        s0 += a0 * a0;
    }
    return s0;
}

double gmm_objective(int d, int k, int n, const double *restrict alphas, const double *restrict means,
                     const double *restrict icf, const double *restrict x, double gamma, int m) {
    int icf_sz = d * (d + 1) / 2;
    double *main_term = malloc(sizeof(double) * (size_t)k * 6);
    double *sum_qs = malloc(sizeof(double) * (size_t)k);
    double *Q = malloc(sizeof(double) * (size_t)k * icf_sz); /* Q_k packed row by row */

    /* ADBench's preprocess_qs (sum(q_k), exp(q_k)), and Q_k copied row by row with its
       diagonal, once per component. Built in a loop of its own: the loops below only read
       it, and zymase re-reads it in the reverse sweep instead of taping every load. */
    for (int ik = 0; ik < k; ik++) {
        const double *q = icf + ik * icf_sz;
        double *Qk = Q + ik * icf_sz;
        double s = 0.0;
        for (int j = 0; j < d; j++) {
            s += q[j];
            Qk[j * (j + 1) / 2 + j] = exp(q[j]);
        }
        sum_qs[ik] = s;
        const double *L = q + d;
        for (int c = 0; c < d; c++)
            for (int r = c + 1; r < d; r++)
                Qk[r * (r + 1) / 2 + c] = *L++;
    }

    double slse = 0.0;
    int i0 = 0;
    for (; i0 + 6 <= n; i0 += 6) {
        for (int ik = 0; ik < k; ik++) {
            double sq[6];
            sqnorm6(d, Q + ik * icf_sz, means + ik * d, x + (size_t)i0 * d, sq);
            for (int b = 0; b < 6; b++)
                main_term[b * k + ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq[b];
        }
        for (int b = 0; b < 6; b++)
            slse += logsumexp(main_term + b * k, k);
    }
    for (; i0 < n; i0++) {
        for (int ik = 0; ik < k; ik++) {
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm1(d, Q + ik * icf_sz, means + ik * d, x + (size_t)i0 * d);
        }
        slse += logsumexp(main_term, k);
    }

    double lse_alphas = logsumexp(alphas, k);

    /* Wishart prior */
    int nn = d + m + 1;
    double C = nn * d * (log(gamma) - 0.5 * log(2.0)) - log_gamma_distrib(0.5 * nn, d);
    double prior = 0.0;
    for (int ik = 0; ik < k; ik++) {
        const double *q = icf + ik * icf_sz;
        double fro = 0.0;
        for (int j = 0; j < d; j++)
            fro += exp(2.0 * q[j]);
        for (int j = d; j < icf_sz; j++)
            fro += q[j] * q[j];
        prior += 0.5 * gamma * gamma * fro - m * sum_qs[ik];
    }
    prior -= k * C;

    free(main_term);
    free(sum_qs);
    free(Q);
    double constant = -n * d * 0.5 * log(2.0 * BENCH_PI);
    return constant + slse - n * lse_alphas + prior;
}

struct ctx {
    int d, k, n, m;
    double gamma;
    double *alphas, *means, *icf, *x;
    double *dalphas, *dmeans, *dicf;
    double sink;
};

static void run_primal(void *p) {
    struct ctx *c = p;
    c->sink += gmm_objective(c->d, c->k, c->n, c->alphas, c->means, c->icf, c->x, c->gamma, c->m);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    int icf_sz = c->d * (c->d + 1) / 2;
    memset(c->dalphas, 0, sizeof(double) * (size_t)c->k);
    memset(c->dmeans, 0, sizeof(double) * (size_t)(c->k * c->d));
    memset(c->dicf, 0, sizeof(double) * (size_t)(c->k * icf_sz));
    __enzyme_autodiff((void *)gmm_objective, enzyme_const, c->d, enzyme_const, c->k, enzyme_const, c->n,
                      enzyme_dup, c->alphas, c->dalphas, enzyme_dup, c->means, c->dmeans,
                      enzyme_dup, c->icf, c->dicf, enzyme_const, c->x, enzyme_const, c->gamma,
                      enzyme_const, c->m);
}

static double eval(void *p) {
    struct ctx *c = p;
    return gmm_objective(c->d, c->k, c->n, c->alphas, c->means, c->icf, c->x, c->gamma, c->m);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: gmm_tuned FILE (an ADBench gmm_d{D}_K{K}.txt file)\n");
        return 2;
    }
    struct ctx c = {0};
    FILE *f = bench_open(argv[1]);
    if (fscanf(f, "%d %d %d", &c.d, &c.k, &c.n) != 3) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    int d = c.d, k = c.k, n = c.n, icf_sz = d * (d + 1) / 2;
    c.alphas = bench_alloc((size_t)k, sizeof(double));
    c.means = bench_alloc((size_t)k * d, sizeof(double));
    c.icf = bench_alloc((size_t)k * icf_sz, sizeof(double));
    c.x = bench_alloc((size_t)n * d, sizeof(double));
    c.dalphas = bench_alloc((size_t)k, sizeof(double));
    c.dmeans = bench_alloc((size_t)k * d, sizeof(double));
    c.dicf = bench_alloc((size_t)k * icf_sz, sizeof(double));
    bench_read_doubles(f, c.alphas, k, argv[1]);
    bench_read_doubles(f, c.means, (long)k * d, argv[1]);
    bench_read_doubles(f, c.icf, (long)k * icf_sz, argv[1]);
    bench_read_doubles(f, c.x, (long)n * d, argv[1]);
    if (fscanf(f, "%lf %d", &c.gamma, &c.m) != 2) {
        fprintf(stderr, "cannot read %s: no Wishart prior (gamma m) at the end\n", argv[1]);
        return 2;
    }
    fclose(f);

    struct bench_workload w = {.name = "gmm_tuned", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "d=%d K=%d n=%d", d, k, n);
    bench_add(&w, "alphas", 'd', c.alphas, k, c.dalphas, 3);
    bench_add(&w, "means", 'd', c.means, (long)k * d, c.dmeans, 4);
    bench_add(&w, "icf", 'd', c.icf, (long)k * icf_sz, c.dicf, 5);
    bench_add(&w, "x", 'd', c.x, (long)n * d, NULL, 0);
    bench_add(&w, "gamma", 'd', &c.gamma, 1, NULL, 0);
    bench_add(&w, "m", 'i', &c.m, 1, NULL, 0);
    return bench_run(&w);
}
