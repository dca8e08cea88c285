/* ADBench bundle adjustment: for each observation (camera c, point X, feature u) the
   reprojection error w * (project(cam_c, X) - u) and for each observation the weight error
   1 - w^2; objective = sum of squares of all residuals, gradient w.r.t. cams, X and w.
   A camera is rotation r (Rodrigues angle-axis, 3), centre C (3), focal f, principal point
   x0 (2), radial distortion k (2):
     Xc = R(r) (X - C); p = Xc[0:2] / Xc[2]; p *= 1 + k1 |p|^2 + k2 |p|^4; proj = f p + x0.
   Usage: ba FILE  (an ADBench ba*.txt file: n m p and one camera, point, weight and feature,
                   replicated as ADBench does: observation i sees camera i mod n and point
                   i mod m; `zymase bench` writes such files) */
#include "bench_common.h"

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
    if (argc != 2) {
        fprintf(stderr, "usage: ba FILE (an ADBench ba*.txt file)\n");
        return 2;
    }
    struct ctx c = {0};
    double cam[NCAM], X0[3], w0, feat[2];
    FILE *f = bench_open(argv[1]);
    if (fscanf(f, "%d %d %d", &c.n, &c.m, &c.p) != 3) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    bench_read_doubles(f, cam, NCAM, argv[1]);
    bench_read_doubles(f, X0, 3, argv[1]);
    bench_read_doubles(f, &w0, 1, argv[1]);
    bench_read_doubles(f, feat, 2, argv[1]);
    fclose(f);
    int n = c.n, m = c.m, p = c.p;
    c.cams = bench_alloc((size_t)NCAM * n, sizeof(double));
    c.dcams = bench_alloc((size_t)NCAM * n, sizeof(double));
    c.X = bench_alloc((size_t)3 * m, sizeof(double));
    c.dX = bench_alloc((size_t)3 * m, sizeof(double));
    c.w = bench_alloc((size_t)p, sizeof(double));
    c.dw = bench_alloc((size_t)p, sizeof(double));
    c.feats = bench_alloc((size_t)2 * p, sizeof(double));
    c.obs = bench_alloc((size_t)2 * p, sizeof(int));
    for (int i = 0; i < n; i++)
        memcpy(c.cams + (size_t)i * NCAM, cam, sizeof cam);
    for (int i = 0; i < m; i++)
        memcpy(c.X + (size_t)i * 3, X0, sizeof X0);
    for (int i = 0; i < p; i++) {
        c.w[i] = w0;
        c.feats[2 * i] = feat[0];
        c.feats[2 * i + 1] = feat[1];
        c.obs[2 * i] = i % n;
        c.obs[2 * i + 1] = i % m;
    }

    struct bench_workload w = {.name = "ba", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "n=%d m=%d p=%d", n, m, p);
    bench_add(&w, "cams", 'd', c.cams, (long)NCAM * n, c.dcams, 11);
    bench_add(&w, "X", 'd', c.X, 3L * m, c.dX, 4);
    bench_add(&w, "w", 'd', c.w, p, c.dw, 4);
    bench_add(&w, "obs", 'i', c.obs, 2L * p, NULL, 0);
    bench_add(&w, "feats", 'd', c.feats, 2L * p, NULL, 0);
    return bench_run(&w);
}
