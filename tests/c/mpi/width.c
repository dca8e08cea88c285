// MPI in vector mode (issue 25 item 2): blocking point-to-point (Sendrecv, Send/Recv),
// collectives (Bcast, Allreduce with MPI_SUM and MPI_MAX, Reduce with MPI_MIN, Gather,
// Scatter, Allgather) and non-blocking messages (two outstanding Isends with the same peer and
// tag, completed by MPI_Waitall on even ranks and by MPI_Wait per request on odd ranks),
// differentiated by __enzyme_fwddiff at widths 2 and 3 and __enzyme_autodiff at widths 1, 2
// and 3. Each lane has its own tangents (forward) or seeds (reverse). Each rank checks its
// lanes against width-1 calls with the same tangents or seeds, and every lane is checked
// against a central finite difference of the global loss along a direction (all ranks
// perturbed together). Run with mpirun -np 2 and 3.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

extern void __enzyme_autodiff(void *, ...);
extern void __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupv, enzyme_width;

#define N 4
#define LANES 3
static int failures, rank, size;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%s rank %d %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", rank, what, at, got, want);
}

static double start(int r, int i) { return 0.3 + 0.17 * r + 0.11 * i; }
// lane k's tangent (forward) or finite-difference direction (reverse), and its seed
static double direction(int k, int r, int i) { return 0.2 - 0.05 * r + 0.3 * i - 0.4 * k + 0.1 * k * i; }
static double seed(int k, int i) { return (0.5 + 0.25 * i) * (1.0 + 0.5 * k) - 0.1 * k * i; }

// blocking messages and collectives
void blocking(const double *x, double *y, int rank, int size) {
    double u[N], v[N], a[N], m[N], g[N * 8], s[N], all[N * 8];
    for (int i = 0; i < N; i++)
        u[i] = sin(x[i]) + x[i];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(u, N, MPI_DOUBLE, right, 3, v, N, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 1)
        MPI_Send(u, 2, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
    else if (rank == 0)
        MPI_Recv(v + 2, 2, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Bcast(v, 2, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        a[i] = u[i] * v[i];
    MPI_Allreduce(a, s, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(u, m, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        a[i] = cos(u[i]) * (1 + 0.1 * rank);
    MPI_Reduce(a, g, N, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Bcast(g, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(u, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 2 * size && rank == 0; i++)
        all[i] = all[i] * all[i] + 0.5 * all[(i + 1) % (2 * size)];
    MPI_Scatter(all, 2, MPI_DOUBLE, a, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgather(a, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = s[i] * u[i] + m[i] * m[i] - g[i] * v[i] + a[i % 2] * all[(i + rank) % (2 * size)];
}

// two messages to the same peer with the same tag, outstanding together: even ranks wait
// with one MPI_Waitall, odd ones with MPI_Wait per request (in posting order)
void nonblocking(const double *x, double *y, int rank, int size) {
    double u[N], in[N];
    MPI_Request req[4];
    for (int i = 0; i < N; i++)
        u[i] = x[i] * x[i] + 0.5 * x[i];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Irecv(in, 2, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(in + 2, 2, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(u, 2, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(u + 1, 2, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &req[3]);
    if (rank % 2 == 0) {
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    } else {
        for (int i = 0; i < 4; i++)
            MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < N; i++)
        y[i] = u[i] * in[i] + (i + 1) * in[(i + 1) % N] * in[(i + 1) % N];
}

typedef void (*function)(const double *, double *, int, int);

static double global_sum(double local) {
    double total;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

// sum over ranks of <seed_k, f(x + h d_j)> (lane j's direction)
static double global_loss(function f, int k, int j, double h) {
    double x[N], y[N], local = 0;
    for (int i = 0; i < N; i++)
        x[i] = start(rank, i) + h * direction(j, rank, i);
    f(x, y, rank, size);
    for (int i = 0; i < N; i++)
        local += seed(k, i) * y[i];
    return global_sum(local);
}

// width-1 derivatives of f (the markers need the function itself, not a pointer)
static void one_reverse(function f, double *x, double *dx, double *y, double *dy) {
    if (f == blocking)
        __enzyme_autodiff((void *)blocking, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, rank, enzyme_const,
                          size);
    else
        __enzyme_autodiff((void *)nonblocking, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, rank,
                          enzyme_const, size);
}

static void one_forward(function f, double *x, double *tx, double *y, double *ty) {
    if (f == blocking)
        __enzyme_fwddiff((void *)blocking, enzyme_dup, x, tx, enzyme_dup, y, ty, enzyme_const, rank, enzyme_const,
                         size);
    else
        __enzyme_fwddiff((void *)nonblocking, enzyme_dup, x, tx, enzyme_dup, y, ty, enzyme_const, rank,
                         enzyme_const, size);
}

// lane k of a width-W call against a width-1 call and a central difference
static void check_lane(function f, const char *name, int W, int k, const double *dx, const double *ty) {
    char what[96];
    double x[N], one_dx[N] = {0}, y[N], dy[N], tx[N], one_ty[N], pairing = 0, tangent = 0, h = 1e-6;
    for (int i = 0; i < N; i++)
        x[i] = start(rank, i), dy[i] = seed(k, i), tx[i] = direction(k, rank, i);
    if (dx) {
        one_reverse(f, x, one_dx, y, dy);
        snprintf(what, sizeof what, "%s reverse width %d vs width 1", name, W);
        for (int i = 0; i < N; i++)
            check(what, 10 * k + i, dx[i], one_dx[i], 1e-12);
        // the lane's gradient along lane k + 3's direction, summed over ranks
        for (int i = 0; i < N; i++)
            pairing += dx[i] * direction(k + 3, rank, i);
        snprintf(what, sizeof what, "%s reverse width %d vs central difference", name, W);
        check(what, k, global_sum(pairing),
              (global_loss(f, k, k + 3, h) - global_loss(f, k, k + 3, -h)) / (2 * h), 1e-6);
    }
    if (ty) {
        one_forward(f, x, tx, y, one_ty);
        snprintf(what, sizeof what, "%s forward width %d vs width 1", name, W);
        for (int i = 0; i < N; i++)
            check(what, 10 * k + i, ty[i], one_ty[i], 1e-12);
        for (int i = 0; i < N; i++)
            tangent += seed(k, i) * ty[i];
        snprintf(what, sizeof what, "%s forward width %d vs central difference", name, W);
        check(what, k, global_sum(tangent), (global_loss(f, k, k, h) - global_loss(f, k, k, -h)) / (2 * h), 1e-6);
    }
}

#define REVERSE(f, W)                                                                                          \
    do {                                                                                                       \
        double x[N], dx[LANES][N], y[N], dy[LANES][N];                                                         \
        memset(dx, 0, sizeof dx);                                                                              \
        for (int i = 0; i < N; i++) {                                                                          \
            x[i] = start(rank, i);                                                                             \
            for (int k = 0; k < W; k++)                                                                        \
                dy[k][i] = seed(k, i);                                                                         \
        }                                                                                                      \
        __enzyme_autodiff((void *)f, enzyme_width, W, enzyme_dupv, (long)sizeof dx[0], x, dx[0], enzyme_dupv,  \
                          (long)sizeof dy[0], y, dy[0], enzyme_const, rank, enzyme_const, size);               \
        for (int k = 0; k < W; k++)                                                                            \
            check_lane(f, #f, W, k, dx[k], NULL);                                                              \
    } while (0)

#define FORWARD(f, W)                                                                                          \
    do {                                                                                                       \
        double x[N], tx[LANES][N], y[N], ty[LANES][N];                                                         \
        for (int i = 0; i < N; i++) {                                                                          \
            x[i] = start(rank, i);                                                                             \
            for (int k = 0; k < W; k++)                                                                        \
                tx[k][i] = direction(k, rank, i);                                                              \
        }                                                                                                      \
        __enzyme_fwddiff((void *)f, enzyme_width, W, enzyme_dupv, (long)sizeof tx[0], x, tx[0], enzyme_dupv,   \
                         (long)sizeof ty[0], y, ty[0], enzyme_const, rank, enzyme_const, size);                \
        for (int k = 0; k < W; k++)                                                                            \
            check_lane(f, #f, W, k, NULL, ty[k]);                                                              \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    REVERSE(blocking, 1);
    REVERSE(blocking, 2);
    REVERSE(blocking, 3);
    FORWARD(blocking, 2);
    FORWARD(blocking, 3);
    REVERSE(nonblocking, 1);
    REVERSE(nonblocking, 2);
    REVERSE(nonblocking, 3);
    FORWARD(nonblocking, 2);
    FORWARD(nonblocking, 3);
    int all = (int)global_sum(failures);
    MPI_Finalize();
    return all != 0;
}
