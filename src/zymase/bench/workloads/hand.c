/* ADBench's hand tracking objective, "simple" variant: a skinned hand model (bones with a
   parent each, vertices bound to bones by weights) is posed by 26 parameters theta (global
   rotation as angle-axis, global translation, and per finger one bone with two angles and
   two with one), and compared with measured points, each matched to a known vertex.
     pose: theta -> per-bone Euler angles; relative_b = base_relative_b * [R(angles_b) 0; 0 1]
     absolute_b = absolute_parent(b) * relative_b; transform_b = absolute_b * inverse_base_absolute_b
     vertex_v = sum_b weight_bv * transform_b * [base_v; 1]  (rows 0..2)
     vertex_v = R_global * vertex_v + translation
     E = sum_i |point_i - vertex_corr(i)|^2
   ADBench computes the Jacobian of the 3 n_corr residuals; here the objective is their sum of
   squares and we take its gradient w.r.t. theta.
   Usage: hand MODEL_DIR FILE   (ADBench's model directory with bones.txt and vertices.txt,
                                 and a hand*_t26_c*.txt instance; `zymase bench` writes them) */
#include "bench_common.h"

#define NTHETA 26
#define MAX_LINE 65536

/* 4x4 matrices are row-major; out may not alias a or b. */
static void mat4_mul(const double *restrict a, const double *restrict b, double *restrict out) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0.0;
            for (int k = 0; k < 4; k++)
                s += a[4 * i + k] * b[4 * k + j];
            out[4 * i + j] = s;
        }
}

/* R = Rz(a[1]) Ry(a[2]) Rx(a[0]), ADBench's "xzy" order; 3x3 row-major */
static void euler_to_rotation(const double *restrict a, double *restrict R) {
    double cx = cos(a[0]), sx = sin(a[0]);
    double cy = cos(a[2]), sy = sin(a[2]);
    double cz = cos(a[1]), sz = sin(a[1]);
    /* Rz Ry */
    double zy[9] = {cz * cy, -sz, cz * sy, sz * cy, cz, sz * sy, -sy, 0.0, cy};
    /* (Rz Ry) Rx */
    for (int i = 0; i < 3; i++) {
        R[3 * i + 0] = zy[3 * i + 0];
        R[3 * i + 1] = zy[3 * i + 1] * cx + zy[3 * i + 2] * sx;
        R[3 * i + 2] = -zy[3 * i + 1] * sx + zy[3 * i + 2] * cx;
    }
}

/* Rotation by the angle-axis vector a (identity below ADBench's threshold |a| < 1e-4). */
static void angle_axis_to_rotation(const double *restrict a, double *restrict R) {
    double norm = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    if (norm < 1e-4) {
        for (int i = 0; i < 9; i++)
            R[i] = (i % 4 == 0) ? 1.0 : 0.0;
        return;
    }
    double x = a[0] / norm, y = a[1] / norm, z = a[2] / norm;
    double s = sin(norm), c = cos(norm);
    R[0] = x * x + (1 - x * x) * c;
    R[1] = x * y * (1 - c) - z * s;
    R[2] = x * z * (1 - c) + y * s;
    R[3] = x * y * (1 - c) + z * s;
    R[4] = y * y + (1 - y * y) * c;
    R[5] = y * z * (1 - c) - x * s;
    R[6] = x * z * (1 - c) - y * s;
    R[7] = z * y * (1 - c) + x * s;
    R[8] = z * z + (1 - z * z) * c;
}

/* ADBench's pose parameters: 3 x (n_bones + 3), column-major. Column 0 global rotation,
   1 scale (ones), 2 global translation, 3 + b the Euler angles of bone b. For each finger
   (bones 1-4, 5-8, ...), its first bone stays at rest, the second gets two angles, the third
   and fourth one each. */
static void to_pose_params(const double *restrict theta, int n_bones, double *restrict pose) {
    for (int i = 0; i < 3 * (n_bones + 3); i++)
        pose[i] = 0.0;
    for (int i = 0; i < 3; i++) {
        pose[i] = theta[i];
        pose[3 + i] = 1.0;
        pose[6 + i] = theta[3 + i];
    }
    int t = 6, col = 5;
    for (int finger = 0; finger < 5; finger++) {
        for (int joint = 2; joint <= 4; joint++) {
            pose[3 * col] = theta[t++];
            if (joint == 2) pose[3 * col + 1] = theta[t++];
            col++;
        }
        col++;
    }
}

double hand_objective(const double *restrict theta, int n_bones, const int *restrict parents,
                      const double *restrict base_relatives, const double *restrict inverse_base_absolutes,
                      int n_verts, const double *restrict base_positions, const double *restrict weights,
                      int n_corr, const int *restrict correspondences, const double *restrict points) {
    double *pose = malloc(sizeof(double) * (size_t)(3 * (n_bones + 3)));
    double *absolutes = malloc(sizeof(double) * (size_t)(16 * n_bones));
    double *transforms = malloc(sizeof(double) * (size_t)(16 * n_bones));
    double *positions = malloc(sizeof(double) * (size_t)(3 * n_verts));
    to_pose_params(theta, n_bones, pose);

    for (int b = 0; b < n_bones; b++) {
        double R[9], posed[16], relative[16];
        euler_to_rotation(pose + 3 * (b + 3), R);
        for (int i = 0; i < 16; i++)
            posed[i] = (i == 15) ? 1.0 : 0.0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                posed[4 * i + j] = R[3 * i + j];
        mat4_mul(base_relatives + 16 * b, posed, relative);
        if (parents[b] < 0)
            memcpy(absolutes + 16 * b, relative, sizeof relative);
        else
            mat4_mul(absolutes + 16 * parents[b], relative, absolutes + 16 * b);
        mat4_mul(absolutes + 16 * b, inverse_base_absolutes + 16 * b, transforms + 16 * b);
    }

    /* linear blend skinning */
    for (int i = 0; i < 3 * n_verts; i++)
        positions[i] = 0.0;
    for (int b = 0; b < n_bones; b++) {
        const double *T = transforms + 16 * b;
        for (int v = 0; v < n_verts; v++) {
            double wt = weights[b * n_verts + v];
            const double *p = base_positions + 3 * v;
            for (int i = 0; i < 3; i++)
                positions[3 * v + i] += wt * (T[4 * i] * p[0] + T[4 * i + 1] * p[1] + T[4 * i + 2] * p[2] + T[4 * i + 3]);
        }
    }

    /* global rotation (columns scaled by pose column 1) and translation */
    double G[9];
    angle_axis_to_rotation(pose, G);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            G[3 * i + j] *= pose[3 + j];

    double e = 0.0;
    for (int k = 0; k < n_corr; k++) {
        const double *p = positions + 3 * correspondences[k];
        for (int i = 0; i < 3; i++) {
            double world = G[3 * i] * p[0] + G[3 * i + 1] * p[1] + G[3 * i + 2] * p[2] + pose[6 + i];
            double r = points[3 * k + i] - world;
            e += r * r;
        }
    }
    free(pose);
    free(absolutes);
    free(transforms);
    free(positions);
    return e;
}

struct ctx {
    int n_bones, n_verts, n_corr;
    int *parents, *corr;
    double *base_rel, *inv_base_abs, *base_pos, *weights, *points;
    double theta[NTHETA], dtheta[NTHETA];
    double sink;
};

static double eval(void *p) {
    struct ctx *c = p;
    return hand_objective(c->theta, c->n_bones, c->parents, c->base_rel, c->inv_base_abs, c->n_verts,
                          c->base_pos, c->weights, c->n_corr, c->corr, c->points);
}

static void run_primal(void *p) {
    struct ctx *c = p;
    c->sink += eval(p);
}

static void run_grad(void *p) {
    struct ctx *c = p;
    memset(c->dtheta, 0, sizeof c->dtheta);
    __enzyme_autodiff((void *)hand_objective, enzyme_dup, c->theta, c->dtheta, enzyme_const, c->n_bones,
                      enzyme_const, c->parents, enzyme_const, c->base_rel, enzyme_const, c->inv_base_abs,
                      enzyme_const, c->n_verts, enzyme_const, c->base_pos, enzyme_const, c->weights,
                      enzyme_const, c->n_corr, enzyme_const, c->corr, enzyme_const, c->points);
}

/* Splits line at ':' into at most max fields; returns the count. */
static int split_fields(char *line, char **fields, int max) {
    int n = 0;
    char *s = line;
    while (n < max) {
        fields[n++] = s;
        char *colon = strchr(s, ':');
        if (!colon) break;
        *colon = '\0';
        s = colon + 1;
    }
    return n;
}

static char *path_join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = bench_alloc(n, 1);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static int count_lines(const char *path) {
    FILE *f = bench_open(path);
    static char line[MAX_LINE];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (line[0] != '\n' && line[0] != '\0') n++;
    fclose(f);
    return n;
}

/* bones.txt: name:parent:16 numbers (base relative, row-major):16 numbers (inverse base absolute) */
static void read_bones(const char *dir, struct ctx *c) {
    char *path = path_join(dir, "bones.txt");
    c->n_bones = count_lines(path);
    c->parents = bench_alloc((size_t)c->n_bones, sizeof(int));
    c->base_rel = bench_alloc((size_t)16 * c->n_bones, sizeof(double));
    c->inv_base_abs = bench_alloc((size_t)16 * c->n_bones, sizeof(double));
    FILE *f = bench_open(path);
    static char line[MAX_LINE];
    char *fields[40];
    for (int b = 0; b < c->n_bones && fgets(line, sizeof line, f);) {
        if (line[0] == '\n') continue;
        if (split_fields(line, fields, 40) != 34) {
            fprintf(stderr, "cannot read %s: bone %d does not have 34 fields\n", path, b);
            exit(2);
        }
        c->parents[b] = atoi(fields[1]);
        for (int i = 0; i < 16; i++) {
            c->base_rel[16 * b + i] = atof(fields[2 + i]);
            c->inv_base_abs[16 * b + i] = atof(fields[18 + i]);
        }
        b++;
    }
    fclose(f);
    free(path);
}

/* vertices.txt: x:y:z:normal(3):uv(2):count:(bone:weight)*count */
static void read_vertices(const char *dir, struct ctx *c) {
    char *path = path_join(dir, "vertices.txt");
    c->n_verts = count_lines(path);
    c->base_pos = bench_alloc((size_t)3 * c->n_verts, sizeof(double));
    c->weights = bench_alloc((size_t)c->n_bones * c->n_verts, sizeof(double));
    FILE *f = bench_open(path);
    static char line[MAX_LINE];
    char *fields[256];
    for (int v = 0; v < c->n_verts && fgets(line, sizeof line, f);) {
        if (line[0] == '\n') continue;
        int n = split_fields(line, fields, 256);
        int count = n > 8 ? atoi(fields[8]) : -1;
        if (count < 0 || n != 9 + 2 * count) {
            fprintf(stderr, "cannot read %s: malformed vertex %d\n", path, v);
            exit(2);
        }
        for (int i = 0; i < 3; i++)
            c->base_pos[3 * v + i] = atof(fields[i]);
        for (int j = 0; j < count; j++) {
            int b = atoi(fields[9 + 2 * j]);
            if (b < 0 || b >= c->n_bones) {
                fprintf(stderr, "cannot read %s: vertex %d names bone %d\n", path, v, b);
                exit(2);
            }
            c->weights[b * c->n_verts + v] = atof(fields[10 + 2 * j]);
        }
        v++;
    }
    fclose(f);
    free(path);
}

/* instance: n_corr n_theta, then n_corr lines "vertex x y z", then n_theta numbers */
static void read_instance(const char *path, struct ctx *c) {
    FILE *f = bench_open(path);
    int n_theta;
    if (fscanf(f, "%d %d", &c->n_corr, &n_theta) != 2 || n_theta != NTHETA) {
        fprintf(stderr, "cannot read %s: expected 'n_corr 26' first\n", path);
        exit(2);
    }
    c->corr = bench_alloc((size_t)c->n_corr, sizeof(int));
    c->points = bench_alloc((size_t)3 * c->n_corr, sizeof(double));
    for (int k = 0; k < c->n_corr; k++) {
        if (fscanf(f, "%d", &c->corr[k]) != 1 || c->corr[k] < 0 || c->corr[k] >= c->n_verts) {
            fprintf(stderr, "cannot read %s: bad correspondence %d\n", path, k);
            exit(2);
        }
        bench_read_doubles(f, c->points + 3 * k, 3, path);
    }
    bench_read_doubles(f, c->theta, NTHETA, path);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: hand MODEL_DIR FILE (ADBench's hand model directory and instance)\n");
        return 2;
    }
    struct ctx c = {0};
    read_bones(argv[1], &c);
    read_vertices(argv[1], &c);
    read_instance(argv[2], &c);

    struct bench_workload w = {.name = "hand", .ctx = &c, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "simple bones=%d verts=%d corr=%d", c.n_bones, c.n_verts, c.n_corr);
    bench_add(&w, "theta", 'd', c.theta, NTHETA, c.dtheta, 8);
    bench_add(&w, "parents", 'i', c.parents, c.n_bones, NULL, 0);
    bench_add(&w, "base_relatives", 'd', c.base_rel, 16L * c.n_bones, NULL, 0);
    bench_add(&w, "inverse_base_absolutes", 'd', c.inv_base_abs, 16L * c.n_bones, NULL, 0);
    bench_add(&w, "base_positions", 'd', c.base_pos, 3L * c.n_verts, NULL, 0);
    bench_add(&w, "weights", 'd', c.weights, (long)c.n_bones * c.n_verts, NULL, 0);
    bench_add(&w, "correspondences", 'i', c.corr, c.n_corr, NULL, 0);
    bench_add(&w, "points", 'd', c.points, 3L * c.n_corr, NULL, 0);
    return bench_run(&w);
}
