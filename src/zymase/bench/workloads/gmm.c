/* ADBench's Gaussian mixture model objective (negative log-likelihood of n points under K
   d-dimensional Gaussians plus a Wishart prior), gradient w.r.t. alphas, means and icf.
   Component k has precision Q_k^T Q_k, where Q_k is lower triangular with diagonal
   exp(icf_k[0..d-1]) and strictly lower part icf_k[d..] stored column by column.
     E = -n d/2 log(2 pi) + sum_i logsumexp_k(alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2)
         - n logsumexp(alpha) + sum_k (gamma^2/2 (|exp(q_k)|^2 + |L_k|^2) - m sum(q_k)) - K C
   with C = N d (log gamma - log(2)/2) - log Gamma_d(N/2), N = d + m + 1.
   Usage: gmm FILE   (an ADBench gmm_d{D}_K{K}.txt file; `zymase bench` writes them) */
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

/* out = Q x for the lower-triangular Q with diagonal qdiag and strictly lower part L
   (column by column) */
static void qtimesx(int d, const double *restrict qdiag, const double *restrict L, const double *restrict x,
                    double *restrict out) {
    for (int i = 0; i < d; i++)
        out[i] = qdiag[i] * x[i];
    for (int j = 0; j < d; j++)
        for (int i = j + 1; i < d; i++)
            out[i] += *L++ * x[j];
}

double gmm_objective(int d, int k, int n, const double *restrict alphas, const double *restrict means,
                     const double *restrict icf, const double *restrict x, double gamma, int m) {
    int icf_sz = d * (d + 1) / 2;
    double *main_term = malloc(sizeof(double) * (size_t)k);
    double *sum_qs = malloc(sizeof(double) * (size_t)k);
    double *qdiags = malloc(sizeof(double) * (size_t)(k * d));
    double *xc = malloc(sizeof(double) * (size_t)d);
    double *qxc = malloc(sizeof(double) * (size_t)d);

    /* ADBench's preprocess_qs: sum(q_k) and the diagonals exp(q_k), once per component */
    for (int ik = 0; ik < k; ik++) {
        double s = 0.0;
        for (int j = 0; j < d; j++) {
            s += icf[ik * icf_sz + j];
            qdiags[ik * d + j] = exp(icf[ik * icf_sz + j]);
        }
        sum_qs[ik] = s;
    }

    double slse = 0.0;
    for (int ix = 0; ix < n; ix++) {
        for (int ik = 0; ik < k; ik++) {
            for (int j = 0; j < d; j++)
                xc[j] = x[ix * d + j] - means[ik * d + j];
            qtimesx(d, qdiags + ik * d, icf + ik * icf_sz + d, xc, qxc);
            double sq = 0.0;
            for (int j = 0; j < d; j++)
                sq += qxc[j] * qxc[j];
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq;
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
    free(qdiags);
    free(xc);
    free(qxc);
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
        fprintf(stderr, "usage: gmm FILE (an ADBench gmm_d{D}_K{K}.txt file)\n");
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

    struct bench_workload w = {.name = "gmm", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "d=%d K=%d n=%d", d, k, n);
    bench_add(&w, "alphas", 'd', c.alphas, k, c.dalphas, 3);
    bench_add(&w, "means", 'd', c.means, (long)k * d, c.dmeans, 4);
    bench_add(&w, "icf", 'd', c.icf, (long)k * icf_sz, c.dicf, 5);
    bench_add(&w, "x", 'd', c.x, (long)n * d, NULL, 0);
    bench_add(&w, "gamma", 'd', &c.gamma, 1, NULL, 0);
    bench_add(&w, "m", 'i', &c.m, 1, NULL, 0);
    return bench_run(&w);
}
