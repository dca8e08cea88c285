// MPI non-blocking point-to-point (issue 27 item 3): a periodic halo exchange with
// MPI_Isend/MPI_Irecv completed by one MPI_Waitall, and an open chain (MPI_PROC_NULL at the
// ends) completed by MPI_Wait per request, two rounds in a loop. Each rank checks its own part of the global gradient: reverse mode
// against central finite differences of the global loss (all ranks evaluate it together,
// one coordinate of one rank perturbed at a time) and forward mode against reverse mode
// (sum over ranks of <w, dy> = sum over ranks of <dx, grad>). Run with mpirun -np 2 and 3.
#include <math.h>
#include <mpi.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_const, enzyme_dup;

#define N 4
static int failures, rank, size;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    failures += !ok;
    printf("%s rank %d %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", rank, what, at, got, want);
}

static double start(int r, int i) { return 0.3 + 0.17 * r + 0.11 * i; }
static double weight(int i) { return 0.5 + 0.25 * i; }
static double direction(int r, int i) { return 0.2 - 0.05 * r + 0.3 * i; }

// one step of a periodic stencil; the ghost cells come with MPI_Irecv, MPI_Waitall
void halo(const double *x, double *y, int rank, int size) {
    double u[N + 2];
    MPI_Request req[4];
    for (int i = 0; i < N; i++)
        u[i + 1] = sin(x[i]) + x[i];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&u[N + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(&u[N], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    for (int i = 1; i <= N; i++)
        y[i - 1] = u[i] * (u[i - 1] + u[i + 1]) - 0.2 * u[i - 1] * u[i - 1];
}

// two rounds of an open chain, each request completed by its own MPI_Wait
void chain(const double *x, double *y, int rank, int size) {
    double u[N + 2];
    u[0] = u[N + 1] = 0.5;
    for (int i = 0; i < N; i++)
        u[i + 1] = x[i];
    int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    for (int round = 0; round < 2; round++) {
        MPI_Request recv_left, recv_right, send_right, send_left;
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &recv_left);
        MPI_Irecv(&u[N + 1], 1, MPI_DOUBLE, right, 6, MPI_COMM_WORLD, &recv_right);
        MPI_Isend(&u[N], 1, MPI_DOUBLE, right, 5, MPI_COMM_WORLD, &send_right);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &send_left);
        MPI_Wait(&send_left, MPI_STATUS_IGNORE);
        MPI_Wait(&recv_left, MPI_STATUS_IGNORE);
        MPI_Wait(&recv_right, MPI_STATUS_IGNORE);
        MPI_Wait(&send_right, MPI_STATUS_IGNORE);
        double v[N + 2];
        for (int i = 1; i <= N; i++)
            v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]) * u[i];
        for (int i = 1; i <= N; i++)
            u[i] = v[i];
    }
    for (int i = 0; i < N; i++)
        y[i] = u[i + 1];
}

typedef void (*function)(const double *, double *, int, int);

// sum over ranks of <w, f(x)>, x perturbed by h at coordinate i of rank q
static double global_loss(function f, int q, int i, double h) {
    double x[N], y[N], local = 0, total;
    for (int j = 0; j < N; j++)
        x[j] = start(rank, j) + (rank == q && j == i ? h : 0);
    f(x, y, rank, size);
    for (int j = 0; j < N; j++)
        local += weight(j) * y[j];
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

static double global_sum(double local) {
    double total;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

#define CHECK(f)                                                                                            \
    do {                                                                                                    \
        double x[N], dx[N] = {0}, y[N], dy[N], tx[N], ty[N], pairing = 0, tangent = 0;                      \
        for (int i = 0; i < N; i++) {                                                                       \
            x[i] = start(rank, i);                                                                          \
            dy[i] = weight(i);                                                                              \
            tx[i] = direction(rank, i);                                                                     \
        }                                                                                                   \
        __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, rank, enzyme_const, \
                          size);                                                                            \
        for (int q = 0; q < size; q++)                                                                      \
            for (int i = 0; i < N; i++) {                                                                   \
                double h = 1e-6, fd = (global_loss(f, q, i, h) - global_loss(f, q, i, -h)) / (2 * h);       \
                if (rank == q)                                                                              \
                    check(#f " reverse vs finite difference", i, dx[i], fd, 1e-6);                         \
            }                                                                                               \
        __enzyme_fwddiff((void *)f, enzyme_dup, x, tx, enzyme_dup, y, ty, enzyme_const, rank, enzyme_const, \
                         size);                                                                             \
        for (int i = 0; i < N; i++) {                                                                       \
            tangent += weight(i) * ty[i];                                                                   \
            pairing += dx[i] * tx[i];                                                                       \
        }                                                                                                   \
        check(#f " forward vs reverse", 0, global_sum(tangent), global_sum(pairing), 1e-12);               \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(halo);
    CHECK(chain);
    int all = (int)global_sum(failures);
    MPI_Finalize();
    return all != 0;
}
