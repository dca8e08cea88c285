// MPI derivatives at width 4 against 4 width-1 calls (issue 25 item 2: "one primal
// computation and N-wide tangent arithmetic, not N copies of the derivative"). A 1-D heat
// equation with a nonlinear term on a periodic domain split across the ranks: each explicit
// step exchanges one ghost cell with each neighbour (MPI_Sendrecv to the right, MPI_Irecv/
// MPI_Isend + MPI_Waitall to the left), and the loss is summed by MPI_Allreduce. At width
// N the derivative sends one message per primal message carrying the N lanes (mpi_lanes.h);
// the width-1 derivative called 4 times sends 4. Forward (__enzyme_fwddiff, 4 tangents)
// and reverse (__enzyme_autodiff, 4 seeds on the loss's 4 weightings). Each round times the
// width-4 call and the 4 width-1 calls (a barrier before each; the slowest rank's time);
// reported: the medians and the median of the per-round ratios width-4 / (4 x width-1).
// Lane 0 of each width-4 call is checked against the width-1 call (exit 1 on a mismatch).
//
//   zymase cc -O2 bench/mpi_width.c $(mpicc --showme:compile) $(mpicc --showme:link) -o /tmp/mpi_width
//   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/mpi_width 64 2000 9
//   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/mpi_width 4096 200 9
//
// (arguments: cells per rank, steps, rounds)
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_width;

#define W 4
#define R 0.25

// u0: this rank's n cells, out[0]: the loss (every rank's copy)
void heat(const double *u0, double *out, int n, int steps, int rank, int size) {
    double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < n; i++)
        a[i + 1] = u0[i];
    for (int s = 0; s < steps; s++) {
        MPI_Request req[2];
        MPI_Sendrecv(&a[n], 1, MPI_DOUBLE, right, 1, &a[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Irecv(&a[n + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&a[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        for (int i = 1; i <= n; i++)
            b[i] = a[i] + R * (a[i - 1] - 2 * a[i] + a[i + 1]) - 0.05 * a[i] * a[i] * a[i];
        double *t = a;
        a = b, b = t;
    }
    double local = 0;
    for (int i = 1; i <= n; i++)
        local += (1.0 + 1e-3 * (i % 17)) * a[i];
    MPI_Allreduce(&local, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    free(a), free(b);
}

static int rank, size, n, steps;
static double *u0, *t0, *du, out, tout[W];

static double now(void) { return MPI_Wtime(); }

// the slowest rank's time of one call of `run`
#define TIMED(run)                                                                                              \
    ({                                                                                                          \
        MPI_Barrier(MPI_COMM_WORLD);                                                                            \
        double t_ = now();                                                                                      \
        run;                                                                                                    \
        t_ = now() - t_;                                                                                        \
        double slowest_;                                                                                        \
        MPI_Allreduce(&t_, &slowest_, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);                                  \
        slowest_;                                                                                               \
    })

#define FWD1(k)                                                                                                 \
    __enzyme_fwddiff((void *)heat, enzyme_dup, u0, t0 + (long)(k) * n, enzyme_dup, &out, &tout[k], enzyme_const, \
                     n, enzyme_const, steps, enzyme_const, rank, enzyme_const, size)
#define FWD4()                                                                                                  \
    __enzyme_fwddiff((void *)heat, enzyme_width, W, enzyme_dupv, (long)(n * sizeof(double)), u0, t0,            \
                     enzyme_dupv, (long)sizeof(double), &out, tout, enzyme_const, n, enzyme_const, steps,       \
                     enzyme_const, rank, enzyme_const, size)
#define REV1(k)                                                                                                 \
    __enzyme_autodiff((void *)heat, enzyme_dup, u0, du + (long)(k) * n, enzyme_dup, &out, &tout[k],             \
                      enzyme_const, n, enzyme_const, steps, enzyme_const, rank, enzyme_const, size)
#define REV4()                                                                                                  \
    __enzyme_autodiff((void *)heat, enzyme_width, W, enzyme_dupv, (long)(n * sizeof(double)), u0, du,           \
                      enzyme_dupv, (long)sizeof(double), &out, tout, enzyme_const, n, enzyme_const, steps,      \
                      enzyme_const, rank, enzyme_const, size)

static void seed(void) {
    memset(du, 0, (size_t)W * n * sizeof(double));
    for (int k = 0; k < W; k++)
        tout[k] = 1.0 + k;
}

static int by_value(const void *x, const void *y) {
    double u = *(const double *)x, v = *(const double *)y;
    return (u > v) - (u < v);
}

static double median(double *v, int m) {
    qsort(v, (size_t)m, sizeof(double), by_value);
    return v[m / 2];
}

static int failed;

static void compare(const char *what, double four, double one) {
    if (fabs(four - one) > 1e-10 * fmax(1, fabs(one))) {
        failed = 1;
        if (rank == 0)
            printf("MISMATCH %s: width 4 lane 0 %.17g, width 1 %.17g\n", what, four, one);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    n = argc > 1 ? atoi(argv[1]) : 64;
    steps = argc > 2 ? atoi(argv[2]) : 2000;
    int rounds = argc > 3 ? atoi(argv[3]) : 9;
    u0 = malloc(n * sizeof(double)), t0 = malloc((size_t)W * n * sizeof(double));
    du = malloc((size_t)W * n * sizeof(double));
    for (int i = 0; i < n; i++)
        u0[i] = 0.5 + 0.4 * sin(0.1 * (i + rank * n));
    for (int k = 0; k < W; k++)
        for (int i = 0; i < n; i++)
            t0[(long)k * n + i] = cos(0.05 * (i + rank * n) + k);
    // lane 0 of each width-4 derivative against width 1
    FWD4();
    double lane0 = tout[0];
    FWD1(0);
    compare("forward", lane0, tout[0]);
    seed(), REV4();
    lane0 = du[n / 2];
    seed(), REV1(0);
    compare("reverse", lane0, du[n / 2]);
    double *f4 = malloc(rounds * sizeof(double)), *f1 = malloc(rounds * sizeof(double));
    double *r4 = malloc(rounds * sizeof(double)), *r1 = malloc(rounds * sizeof(double));
    double *fr = malloc(rounds * sizeof(double)), *rr = malloc(rounds * sizeof(double));
    double *pr = malloc(rounds * sizeof(double));
    for (int r = 0; r < rounds; r++) {
        pr[r] = TIMED(heat(u0, &out, n, steps, rank, size));
        f4[r] = TIMED(FWD4());
        f1[r] = 0;
        for (int k = 0; k < W; k++)
            f1[r] += TIMED(FWD1(k));
        seed();
        r4[r] = TIMED(REV4());
        r1[r] = 0;
        for (int k = 0; k < W; k++) {
            seed();
            r1[r] += TIMED(REV1(k));
        }
        fr[r] = f4[r] / f1[r], rr[r] = r4[r] / r1[r];
    }
    if (rank == 0) {
        printf("ranks %d, cells per rank %d, steps %d, rounds %d (medians, slowest rank)\n", size, n, steps, rounds);
        printf("primal %8.2f ms\n", 1e3 * median(pr, rounds));
        printf("forward  width 4 %8.2f ms  4 x width 1 %8.2f ms  ratio %.2f (median round ratio %.2f)\n",
               1e3 * median(f4, rounds), 1e3 * median(f1, rounds), median(f4, rounds) / median(f1, rounds),
               median(fr, rounds));
        printf("reverse  width 4 %8.2f ms  4 x width 1 %8.2f ms  ratio %.2f (median round ratio %.2f)\n",
               1e3 * median(r4, rounds), 1e3 * median(r1, rounds), median(r4, rounds) / median(r1, rounds),
               median(rr, rounds));
    }
    MPI_Finalize();
    return failed;
}
