/* ADBench bundle adjustment: for each observation (camera c, point X, feature u) the
   reprojection error w * (project(cam_c, X) - u) and for each observation the weight error
   1 - w^2; objective = sum of squares of all residuals, gradient w.r.t. cams, X and w.
   A camera is rotation r (Rodrigues angle-axis, 3), centre C (3), focal f, principal point
   x0 (2), radial distortion k (2):
     Xc = R(r) (X - C); p = Xc[0:2] / Xc[2]; p *= 1 + k1 |p|^2 + k2 |p|^4; proj = f p + x0.
   Usage: ba [n m p]  (default 49 7776 31843, ADBench's ba1 size; one camera, point, weight
          and feature replicated as ADBench does, with small deterministic perturbations)
          ba FILE     (an ADBench ba*.txt file, replicated exactly as ADBench does) */
#include "bench_common.h"

extern double __enzyme_autodiff(void *, ...);

#define NCAM 11

static void rodrigues_rotate(const double *restrict r, const double *restrict x, double *restrict out) {
    double sqtheta = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
    if (sqtheta != 0.0) {
        double theta = sqrt(sqtheta);
        double c = cos(theta), s = sin(theta), inv = 1.0 / theta;
        double w0 = r[0] * inv, w1 = r[1] * inv, w2 = r[2] * inv;
        double cx0 = w1 * x[2] - w2 * x[1];
        double cx1 = w2 * x[0] - w0 * x[2];
        double cx2 = w0 * x[1] - w1 * x[0];
        double t = (w0 * x[0] + w1 * x[1] + w2 * x[2]) * (1.0 - c);
        out[0] = x[0] * c + cx0 * s + w0 * t;
        out[1] = x[1] * c + cx1 * s + w1 * t;
        out[2] = x[2] * c + cx2 * s + w2 * t;
    } else {
        out[0] = x[0] + r[1] * x[2] - r[2] * x[1];
        out[1] = x[1] + r[2] * x[0] - r[0] * x[2];
        out[2] = x[2] + r[0] * x[1] - r[1] * x[0];
    }
}

static void project(const double *restrict cam, const double *restrict X, double *restrict proj) {
    double xo[3], xc[3];
    for (int i = 0; i < 3; i++)
        xo[i] = X[i] - cam[3 + i];
    rodrigues_rotate(cam, xo, xc);
    double p0 = xc[0] / xc[2], p1 = xc[1] / xc[2];
    double rsq = p0 * p0 + p1 * p1;
    double L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq;
    proj[0] = p0 * L * cam[6] + cam[7];
    proj[1] = p1 * L * cam[6] + cam[8];
}

double ba_objective(int n, int m, int p, const double *restrict cams, const double *restrict X,
                    const double *restrict w, const int *restrict obs, const double *restrict feats) {
    (void)n;
    (void)m;
    double s = 0.0;
    for (int i = 0; i < p; i++) {
        double proj[2];
        project(cams + NCAM * obs[2 * i], X + 3 * obs[2 * i + 1], proj);
        double e0 = w[i] * (proj[0] - feats[2 * i]);
        double e1 = w[i] * (proj[1] - feats[2 * i + 1]);
        s += e0 * e0 + e1 * e1;
    }
    for (int i = 0; i < p; i++) {
        double we = 1.0 - w[i] * w[i];
        s += we * we;
    }
    return s;
}

struct ctx {
    int n, m, p;
    double *cams, *X, *w, *feats, *dcams, *dX, *dw;
    int *obs;
    double sink;
};

static void run_primal(void *q) {
    struct ctx *c = q;
    c->sink += ba_objective(c->n, c->m, c->p, c->cams, c->X, c->w, c->obs, c->feats);
}

static void run_grad(void *q) {
    struct ctx *c = q;
    memset(c->dcams, 0, sizeof(double) * (size_t)(NCAM * c->n));
    memset(c->dX, 0, sizeof(double) * (size_t)(3 * c->m));
    memset(c->dw, 0, sizeof(double) * (size_t)c->p);
    __enzyme_autodiff((void *)ba_objective, enzyme_const, c->n, enzyme_const, c->m, enzyme_const, c->p,
                      enzyme_dup, c->cams, c->dcams, enzyme_dup, c->X, c->dX, enzyme_dup, c->w, c->dw,
                      enzyme_const, c->obs, enzyme_const, c->feats);
}

static double eval(void *q) {
    struct ctx *c = q;
    return ba_objective(c->n, c->m, c->p, c->cams, c->X, c->w, c->obs, c->feats);
}

int main(int argc, char **argv) {
    struct ctx c = {.n = 49, .m = 7776, .p = 31843};
    /* ADBench's ba1 camera, point, weight and feature */
    double cam[NCAM] = {-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673,
                        419.194514, 5.864426, -8.518870, 0.087812, 0.002739};
    double X0[3] = {7.203245, 0.001144, 3.023326}, w0 = 0.417022, feat[2] = {271.760969, 834.209256};
    double jitter = 1.0;
    if (argc == 2) {
        FILE *f = fopen(argv[1], "r");
        int ok = f && fscanf(f, "%d %d %d", &c.n, &c.m, &c.p) == 3;
        for (int i = 0; ok && i < NCAM; i++) ok = fscanf(f, "%lf", &cam[i]) == 1;
        for (int i = 0; ok && i < 3; i++) ok = fscanf(f, "%lf", &X0[i]) == 1;
        ok = ok && fscanf(f, "%lf %lf %lf", &w0, &feat[0], &feat[1]) == 3;
        if (!ok) {
            fprintf(stderr, "ba: cannot read %s\n", argv[1]);
            return 2;
        }
        fclose(f);
        jitter = 0.0;
    } else if (argc >= 4) {
        c.n = atoi(argv[1]);
        c.m = atoi(argv[2]);
        c.p = atoi(argv[3]);
    }
    int n = c.n, m = c.m, p = c.p;
    c.cams = malloc(sizeof(double) * (size_t)(NCAM * n));
    c.dcams = malloc(sizeof(double) * (size_t)(NCAM * n));
    c.X = malloc(sizeof(double) * (size_t)(3 * m));
    c.dX = malloc(sizeof(double) * (size_t)(3 * m));
    c.w = malloc(sizeof(double) * (size_t)p);
    c.dw = malloc(sizeof(double) * (size_t)p);
    c.feats = malloc(sizeof(double) * (size_t)(2 * p));
    c.obs = malloc(sizeof(int) * (size_t)(2 * p));
    bench_seed(7);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < NCAM; j++)
            c.cams[i * NCAM + j] = cam[j] * (1.0 + jitter * 0.01 * (bench_uniform() - 0.5));
    for (int i = 0; i < m; i++)
        for (int j = 0; j < 3; j++)
            c.X[i * 3 + j] = X0[j] + jitter * 0.1 * (bench_uniform() - 0.5);
    for (int i = 0; i < p; i++) {
        c.w[i] = w0 + jitter * 0.1 * (bench_uniform() - 0.5);
        c.feats[2 * i] = feat[0] + jitter * (bench_uniform() - 0.5);
        c.feats[2 * i + 1] = feat[1] + jitter * (bench_uniform() - 0.5);
        c.obs[2 * i] = i % n; /* ADBench's replication: camera i mod n, point i mod m */
        c.obs[2 * i + 1] = i % m;
    }

    double tp = bench_time(run_primal, &c, bench_min_s(), bench_repeats());
    double tg = bench_time(run_grad, &c, bench_min_s(), bench_repeats());
    run_grad(&c);
    double err = 0.0, e;
    e = bench_check("dcams", eval, &c, c.cams, c.dcams, (long)NCAM * n, 11); if (e > err) err = e;
    e = bench_check("dX", eval, &c, c.X, c.dX, 3L * m, 4); if (e > err) err = e;
    e = bench_check("dw", eval, &c, c.w, c.dw, p, 4); if (e > err) err = e;
    char size[64];
    snprintf(size, sizeof size, "n=%d m=%d p=%d", n, m, p);
    int rc = bench_report("ba", size, tp, tg, err);
    free(c.cams); free(c.dcams); free(c.X); free(c.dX); free(c.w); free(c.dw); free(c.feats); free(c.obs);
    return rc;
}
