// MPI at width 4 (issue 25 item 2): one derivative message per primal message, carrying
// the 4 lanes. A halo exchange on a ring (MPI_Sendrecv for the left ghost cell, MPI_Irecv/
// MPI_Isend + MPI_Waitall for the right one), a stencil, a Sendrecv with MPI_PROC_NULL
// ends, MPI_Bcast, MPI_Allreduce (MPI_SUM
// and MPI_MAX) and MPI_Reduce, differentiated by __enzyme_fwddiff and __enzyme_autodiff at
// width 4; each rank checks its lanes against width-1 calls and a central difference of the
// global loss. argv[1] runs one derivative alone ("primal", "fwd1", "fwd4", "rev1", "rev4"):
// tests/test_c_mpi.py counts the MPI calls each makes with a PMPI shim preloaded, so that
// width 4 is seen to send as many messages as width 1. Run with mpirun -np 2 and 3.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_width;

#define N 6
#define W 4
static int failures, rank, size;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%s rank %d %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", rank, what, at, got, want);
}

static double start(int r, int i) { return 0.3 + 0.17 * r + 0.11 * i; }
static double direction(int k, int r, int i) { return 0.2 - 0.05 * r + 0.3 * i - 0.4 * k + 0.1 * k * i; }
static double seed(int k, int i) { return (0.5 + 0.25 * i) * (1.0 + 0.5 * k) - 0.1 * k * i; }

void halo(const double *x, double *y, int rank, int size) {
    double u[N + 2], s[2], t[2], top[2];
    MPI_Request req[2];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < N; i++)
        u[i + 1] = x[i] * x[i] + 0.5 * sin(x[i]);
    MPI_Sendrecv(&u[N], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Irecv(&u[N + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < N; i++)
        y[i] = u[i] - 2 * u[i + 1] + u[i + 2] + 0.1 * u[i + 1] * u[i + 2];
    // non-periodic ends: rank 0 receives from MPI_PROC_NULL, which leaves `edge` (and its
    // tangent) as it was
    int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    double edge = 0.5 * x[1];
    MPI_Sendrecv(&y[N - 1], 1, MPI_DOUBLE, up, 3, &edge, 1, MPI_DOUBLE, down, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    y[0] += 0.3 * edge * edge;
    s[0] = y[0] + y[N - 1], s[1] = y[1] * y[2];
    MPI_Bcast(s, 2, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    MPI_Allreduce(s, t, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(y, top, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Reduce(t, s, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] += t[i % 2] * top[(i + 1) % 2] + (rank == 0 ? 0.01 * s[i % 2] * y[i] : 0.0);
}

static double global_sum(double local) {
    double total;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

static double global_loss(int k, int j, double h) {
    double x[N], y[N], local = 0;
    for (int i = 0; i < N; i++)
        x[i] = start(rank, i) + h * direction(j, rank, i);
    halo(x, y, rank, size);
    for (int i = 0; i < N; i++)
        local += seed(k, i) * y[i];
    return global_sum(local);
}

#define FWD1(x, tx, y, ty)                                                                                      \
    __enzyme_fwddiff((void *)halo, enzyme_dup, x, tx, enzyme_dup, y, ty, enzyme_const, rank, enzyme_const, size)
#define REV1(x, dx, y, dy)                                                                                      \
    __enzyme_autodiff((void *)halo, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, rank, enzyme_const, size)
#define FWD4(x, tx, y, ty)                                                                                      \
    __enzyme_fwddiff((void *)halo, enzyme_width, W, enzyme_dupv, (long)sizeof(double[N]), x, tx, enzyme_dupv,   \
                     (long)sizeof(double[N]), y, ty, enzyme_const, rank, enzyme_const, size)
#define REV4(x, dx, y, dy)                                                                                      \
    __enzyme_autodiff((void *)halo, enzyme_width, W, enzyme_dupv, (long)sizeof(double[N]), x, dx, enzyme_dupv,  \
                      (long)sizeof(double[N]), y, dy, enzyme_const, rank, enzyme_const, size)

static void lanes(double x[N], double tx[W][N], double dy[W][N]) {
    for (int i = 0; i < N; i++)
        x[i] = start(rank, i);
    for (int k = 0; k < W; k++)
        for (int i = 0; i < N; i++)
            tx[k][i] = direction(k, rank, i), dy[k][i] = seed(k, i);
}

static void check_all(void) {
    double x[N], y[N], tx[W][N], ty[W][N], dx[W][N] = {{0}}, dy[W][N], h = 1e-6;
    lanes(x, tx, dy);
    FWD4(x, tx[0], y, ty[0]);
    for (int k = 0; k < W; k++) {
        double x1[N], y1[N], t1[N], tangent = 0;
        lanes(x1, tx, dy);
        FWD1(x1, tx[k], y1, t1);
        for (int i = 0; i < N; i++) {
            check("forward width 4 vs width 1", 10 * k + i, ty[k][i], t1[i], 1e-12);
            tangent += seed(k, i) * ty[k][i];
        }
        check("forward width 4 vs central difference", k, global_sum(tangent),
              (global_loss(k, k, h) - global_loss(k, k, -h)) / (2 * h), 1e-6);
    }
    lanes(x, tx, dy);
    REV4(x, dx[0], y, dy[0]);
    for (int k = 0; k < W; k++) {
        double x1[N], y1[N], d1[N] = {0}, dy1[N], pairing = 0;
        lanes(x1, tx, dy);
        memcpy(dy1, dy[k], sizeof dy1);
        REV1(x1, d1, y1, dy1);
        for (int i = 0; i < N; i++) {
            check("reverse width 4 vs width 1", 10 * k + i, dx[k][i], d1[i], 1e-12);
            pairing += dx[k][i] * direction(k + 3, rank, i);
        }
        check("reverse width 4 vs central difference", k, global_sum(pairing),
              (global_loss(k, k + 3, h) - global_loss(k, k + 3, -h)) / (2 * h), 1e-6);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    double x[N], y[N], tx[W][N], ty[W][N], dx[W][N] = {{0}}, dy[W][N];
    lanes(x, tx, dy);
    if (!strcmp(mode, "primal"))
        halo(x, y, rank, size);
    else if (!strcmp(mode, "fwd1"))
        FWD1(x, tx[0], y, ty[0]);
    else if (!strcmp(mode, "fwd4"))
        FWD4(x, tx[0], y, ty[0]);
    else if (!strcmp(mode, "rev1"))
        REV1(x, dx[0], y, dy[0]);
    else if (!strcmp(mode, "rev4"))
        REV4(x, dx[0], y, dy[0]);
    else
        check_all();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !mode[0])
        printf("%d failures\n", total);
    MPI_Finalize();
    return total != 0;
}
