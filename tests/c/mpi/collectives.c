// MPI collectives (issue 27 item 3): MPI_Bcast from the last rank, MPI_Reduce to rank 0 and
// MPI_Allreduce with MPI_SUM (with an MPI_Barrier between), MPI_Allreduce with MPI_MAX and
// MPI_Reduce with MPI_MIN, MPI_Gather/MPI_Scatter/MPI_Allgather, and MPI_Allreduce of
// MPI_FLOAT data. Each rank checks its own part of the global gradient: reverse mode
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

// every rank multiplies by the last rank's values, broadcast
void bcast(const double *x, double *y, int rank, int size) {
    (void)rank;
    double b[N];
    for (int i = 0; i < N; i++)
        b[i] = x[i] * x[i];
    MPI_Bcast(b, N, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = x[i] * b[i] + sin(b[(i + 1) % N]);
}

// rank 0 gets the sum of exp(x) over ranks; the others keep their own values
void reduce(const double *x, double *y, int rank, int size) {
    (void)size;
    double e[N], s[N];
    for (int i = 0; i < N; i++)
        e[i] = exp(x[i]);
    MPI_Reduce(e, s, N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = rank == 0 ? s[i] * x[i] : x[i] * x[i];
}

// every rank gets the sum over ranks of x*x, twice reduced, a barrier between
void allreduce(const double *x, double *y, int rank, int size) {
    (void)rank, (void)size;
    double q[N], s[N], t[N];
    for (int i = 0; i < N; i++)
        q[i] = x[i] * x[i];
    MPI_Allreduce(q, s, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        s[i] = s[i] * x[i];
    MPI_Allreduce(s, t, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = t[i] + s[i];
}

// the largest of sin(3x + i) over ranks (everywhere) and the smallest of x*x-x (at rank 0):
// one rank's value per element, a different rank for different elements
void extrema(const double *x, double *y, int rank, int size) {
    (void)size;
    double q[N], m[N], p[N], l[N];
    for (int i = 0; i < N; i++) {
        q[i] = sin(3 * x[i] + i);
        p[i] = x[i] * x[i] - x[i];
    }
    MPI_Allreduce(q, m, N, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Reduce(p, l, N, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = m[i] * x[i] + (rank == 0 ? l[i] * l[i] : 0.0);
}

// rank 0 gathers every rank's block (the others pass NULL), changes it and scatters it
// back; then every rank gathers all blocks (at most 4 ranks)
void blocks(const double *x, double *y, int rank, int size) {
    double q[N], all[4 * N], back[N], every[4 * N];
    for (int i = 0; i < N; i++)
        q[i] = x[i] * x[i] + i;
    MPI_Gather(q, N, MPI_DOUBLE, rank == 0 ? all : NULL, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int j = 0; j < N * size; j++)
            all[j] = sin(all[j]) * (1 + 0.1 * j);
    MPI_Scatter(all, N, MPI_DOUBLE, back, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgather(back, N, MPI_DOUBLE, every, N, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = back[i] * x[i] + every[(i + N * (rank + 1)) % (N * size)];
}

// the same sum over ranks of x*x in single precision (MPI_FLOAT)
void allreduce_float(const double *x, double *y, int rank, int size) {
    (void)rank, (void)size;
    float q[N], s[N];
    for (int i = 0; i < N; i++)
        q[i] = (float)(x[i] * x[i]);
    MPI_Allreduce(q, s, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        y[i] = (double)s[i] * x[i];
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
    CHECK(bcast);
    CHECK(reduce);
    CHECK(allreduce);
    CHECK(extrema);
    CHECK(blocks);
    // single precision: the closed form of d/dx[i] sum_r w_i s_i x_r[i], s_i = sum_r x_r[i]^2
    double x[N], dx[N] = {0}, y[N], dy[N];
    for (int i = 0; i < N; i++) {
        x[i] = start(rank, i);
        dy[i] = weight(i);
    }
    __enzyme_autodiff((void *)allreduce_float, enzyme_dup, x, dx, enzyme_dup, y, dy, enzyme_const, rank,
                      enzyme_const, size);
    for (int i = 0; i < N; i++) {
        double s = 0, sx = 0;
        for (int r = 0; r < size; r++) {
            s += start(r, i) * start(r, i);
            sx += start(r, i);
        }
        check("allreduce_float reverse vs closed form", i, dx[i], weight(i) * (s + 2 * x[i] * sx), 1e-6);
    }
    int all = (int)global_sum(failures);
    MPI_Finalize();
    return all != 0;
}
