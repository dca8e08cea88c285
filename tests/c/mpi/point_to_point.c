// MPI point-to-point (issue 27 item 3): two rounds of a ring of blocking MPI_Send/MPI_Recv
// (even ranks send first), a periodic halo exchange with MPI_Sendrecv, and an open chain whose ends
// talk to MPI_PROC_NULL. Each rank checks its own part of the global gradient: reverse mode
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

// the ring, twice: the right neighbour gets x*x and sin(x), then the sums; even ranks send
// first (the second receive overwrites the first one's values, which were used)
void ring(const double *x, double *y, int rank, int size) {
    double v[N], got[N];
    for (int i = 0; i < N; i++)
        v[i] = i % 2 ? x[i] * x[i] : sin(x[i]);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int round = 0; round < 2; round++) {
        if (rank % 2 == 0) {
            MPI_Send(v, N, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
            MPI_Recv(got, N, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(got, N, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(v, N, MPI_DOUBLE, right, 7, MPI_COMM_WORLD);
        }
        for (int i = 0; i < N; i++)
            v[i] = got[i] * x[i] + x[(i + 1) % N];
    }
    for (int i = 0; i < N; i++)
        y[i] = v[i];
}

// one explicit step of a periodic 1-D stencil, the ghost cells exchanged with MPI_Sendrecv
void halo(const double *x, double *y, int rank, int size) {
    double u[N + 2];
    for (int i = 0; i < N; i++)
        u[i + 1] = x[i];
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(&u[N], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 2, &u[N + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 1; i <= N; i++)
        y[i - 1] = u[i] + 0.3 * (u[i - 1] - 2 * u[i] + u[i + 1]) + 0.1 * u[i - 1] * u[i + 1];
}

// an open chain: the end ranks exchange with MPI_PROC_NULL (their ghost cells keep 1.5)
void chain(const double *x, double *y, int rank, int size) {
    double u[N + 2];
    u[0] = u[N + 1] = 1.5;
    for (int i = 0; i < N; i++)
        u[i + 1] = x[i] * x[i];
    int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    MPI_Sendrecv(&u[N], 1, MPI_DOUBLE, right, 3, &u[0], 1, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 4, &u[N + 1], 1, MPI_DOUBLE, right, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 1; i <= N; i++)
        y[i - 1] = u[i - 1] * u[i + 1] + cos(u[i]);
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
    CHECK(ring);
    CHECK(halo);
    CHECK(chain);
    int all = (int)global_sum(failures);
    MPI_Finalize();
    return all != 0;
}
