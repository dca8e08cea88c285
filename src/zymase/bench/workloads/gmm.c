/* ADBench's Gaussian mixture model objective (negative log-likelihood of n points under K
   d-dimensional Gaussians plus a Wishart prior), gradient w.r.t. alphas, means and icf,
   written the way ADBench's reference implementation (its C++ "manual" and AD-tool ports)
   writes it: for each point and each component, centre the point, multiply by Q_k (its
   diagonal exp(q_k) and its strictly lower part stored column by column in icf), take the
   squared norm, then a log-sum-exp over the components. Scratch vectors are malloc'd once.
   This is the workload the headline comparisons use; gmm_tuned.c is the same objective
   restructured for speed (shown beside it, labelled as tuned).
     E = -n d/2 log(2 pi) + sum_i logsumexp_k(alpha_k + sum(q_k) - |Q_k (x_i - mu_k)|^2 / 2)
         - n logsumexp(alpha) + sum_k (gamma^2/2 (|exp(q_k)|^2 + |L_k|^2) - m sum(q_k)) - K C
   with C = N d (log gamma - log(2)/2) - log Gamma_d(N/2), N = d + m + 1.
   Usage: gmm FILE   (an ADBench gmm_d{D}_K{K}.txt file; `zymase bench` writes them) */
#include "bench_common.h"

static double arr_max(int n, const double *x) {
    double m = x[0];
    for (int i = 1; i < n; i++)
        if (m < x[i]) m = x[i];
    return m;
}

static double sqnorm(int n, const double *x) {
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    return s;
}

/* out = x - y */
static void subtract(int d, const double *x, const double *y, double *out) {
    for (int i = 0; i < d; i++)
        out[i] = x[i] - y[i];
}

static double logsumexp(int n, const double *x) {
    double mx = arr_max(n, x);
    double semx = 0.0;
    for (int i = 0; i < n; i++)
        semx += exp(x[i] - mx);
    return log(semx) + mx;
}

/* log of the multivariate gamma function Gamma_p(a) */
static double log_gamma_distrib(double a, int p) {
    double r = 0.25 * p * (p - 1) * log(BENCH_PI);
    for (int j = 1; j <= p; j++)
        r += lgamma(a + 0.5 * (1 - j));
    return r;
}

/* sum(q_k) and exp(q_k) for every component (q_k: the first d entries of icf_k) */
static void preprocess_qs(int d, int k, const double *icf, double *sum_qs, double *Qdiags) {
    int icf_sz = d * (d + 1) / 2;
    for (int ik = 0; ik < k; ik++) {
        sum_qs[ik] = 0.0;
        for (int id = 0; id < d; id++) {
            double q = icf[ik * icf_sz + id];
            sum_qs[ik] += q;
            Qdiags[ik * d + id] = exp(q);
        }
    }
}

/* out = Q x, Q lower triangular: diagonal Qdiag, strictly lower part ltri column by column */
static void Qtimesx(int d, const double *Qdiag, const double *ltri, const double *x, double *out) {
    for (int i = 0; i < d; i++)
        out[i] = Qdiag[i] * x[i];
    int Lparamsidx = 0;
    for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++) {
            out[j] += ltri[Lparamsidx] * x[i];
            Lparamsidx++;
        }
}

static double log_wishart_prior(int p, int k, double gamma, int m, const double *sum_qs, const double *Qdiags,
                                const double *icf) {
    int n = p + m + 1;
    int icf_sz = p * (p + 1) / 2;
    double C = n * p * (log(gamma) - 0.5 * log(2.0)) - log_gamma_distrib(0.5 * n, p);
    double out = 0.0;
    for (int ik = 0; ik < k; ik++) {
        double frobenius = sqnorm(p, &Qdiags[ik * p]) + sqnorm(icf_sz - p, &icf[ik * icf_sz + p]);
        out += 0.5 * gamma * gamma * frobenius - m * sum_qs[ik];
    }
    return out - k * C;
}

double gmm_objective(int d, int k, int n, const double *alphas, const double *means, const double *icf,
                     const double *x, double gamma, int m) {
    const double CONSTANT = -n * d * 0.5 * log(2.0 * BENCH_PI);
    int icf_sz = d * (d + 1) / 2;
    double *Qdiags = malloc(sizeof(double) * (size_t)d * k);
    double *sum_qs = malloc(sizeof(double) * (size_t)k);
    double *xcentered = malloc(sizeof(double) * (size_t)d);
    double *Qxcentered = malloc(sizeof(double) * (size_t)d);
    double *main_term = malloc(sizeof(double) * (size_t)k);

    preprocess_qs(d, k, icf, sum_qs, Qdiags);

    double slse = 0.0;
    for (int ix = 0; ix < n; ix++) {
        for (int ik = 0; ik < k; ik++) {
            subtract(d, &x[ix * d], &means[ik * d], xcentered);
            Qtimesx(d, &Qdiags[ik * d], &icf[ik * icf_sz + d], xcentered, Qxcentered);
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm(d, Qxcentered);
        }
        slse += logsumexp(k, main_term);
    }
    double lse_alphas = logsumexp(k, alphas);
    double err = CONSTANT + slse - n * lse_alphas + log_wishart_prior(d, k, gamma, m, sum_qs, Qdiags, icf);

    free(Qdiags);
    free(sum_qs);
    free(xcentered);
    free(Qxcentered);
    free(main_term);
    return err;
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
