// MPI gradient of a 1-D heat equation with halo exchange (issue 27 item 3, performance).
// The periodic domain of n cells per rank is split across the ranks; each explicit step
// exchanges one ghost cell with each neighbour (MPI_Sendrecv) and updates
// u += r (u[i-1] - 2 u[i] + u[i+1]) (- c u^3 when built with -DCUBIC=c: the nonlinear variant). Every rank checks its slice of the gradient
// of sum(w .* u(T)) against the gradient of the serial program over the whole domain
// (zymase's too, computed on every rank), then times primal and gradient alternating
// (medians; a barrier before each run; the slowest rank's time, and each rank's own), and
// the serial program of n cells on every rank at once for reference:
//
//   zymase cc -O2 bench/mpi_heat.c $(mpicc --showme:compile) $(mpicc --showme:link) -o /tmp/mpi_heat
//   mpirun --allow-run-as-root --oversubscribe -np 2 /tmp/mpi_heat 20000 200 9
//   mpirun --allow-run-as-root --oversubscribe -np 4 /tmp/mpi_heat 10000 200 9
//
// and the same with -DCUBIC=0.05 added to the build for the nonlinear variant.
//
// A hand-written adjoint of the distributed program runs in the same rounds ("hand": a
// REFERENCE, not a workload; compiled in this file with the same flags and layout): the
// forward sweep is the primal storing each step's state u[1..n] (a tape kept between calls,
// as zymase's is; the nonlinear variant's partial 1 - 2R - 3 CUBIC u^2 needs u; the default
// linear build's derivative needs no state, so there it is an upper reference), the reverse sweep gathers each cell's three adds
// and sends the ghost cells' adjoints back (MPI_Sendrecv in the opposite directions). It is
// the floor a taped derivative of the -DCUBIC variant can be held to; checked against zymase's.
// (arguments: cells per rank, steps, rounds). Prints the largest difference from the
// serial gradient and the gradient/primal ratios; exits 1 when the gradients differ by more than
// rounding (1e-12 relative to the largest entry).
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

#define R 0.25
// The default build is the heat equation itself (linear: its derivative needs no state).
// -DCUBIC=c adds a nonlinear reaction term - c u^3 (c = 0.05 in the results), whose
// derivative needs each step's state: the taped variant. Until session 26 the default kept
// the term with c = 0.0, which no heat-equation program has and which forced the tape
// (0 * u^2 is NaN where u is not finite, so the partial could not be dropped).
#ifdef CUBIC
#define REACTION(u) (CUBIC * (u) * (u) * (u))
#else
#define CUBIC 0.0  // for the hand-written references' partial only
#endif

static void step(const double *u, double *v, int n) {
    for (int i = 1; i <= n; i++)
        v[i] = u[i] + R * (u[i - 1] - 2 * u[i] + u[i + 1])
#ifdef REACTION
               - REACTION(u[i])
#endif
            ;
}

// the distributed program: u0 and uT are this rank's n cells
void heat(const double *u0, double *uT, int n, int steps, int rank, int size) {
    double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < n; i++)
        a[i + 1] = u0[i];
    for (int t = 0; t < steps; t++) {
        MPI_Sendrecv(&a[n], 1, MPI_DOUBLE, right, 0, &a[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(&a[1], 1, MPI_DOUBLE, left, 1, &a[n + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        step(a, b, n);
        double *s = a;
        a = b;
        b = s;
    }
    for (int i = 0; i < n; i++)
        uT[i] = a[i + 1];
    free(a);
    free(b);
}

// the serial program over the whole periodic domain of n cells
void heat_serial(const double *u0, double *uT, int n, int steps) {
    double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    for (int i = 0; i < n; i++)
        a[i + 1] = u0[i];
    for (int t = 0; t < steps; t++) {
        a[0] = a[n];
        a[n + 1] = a[1];
        step(a, b, n);
        double *s = a;
        a = b;
        b = s;
    }
    for (int i = 0; i < n; i++)
        uT[i] = a[i + 1];
    free(a);
    free(b);
}


// REFERENCE (hand-written adjoint, see the header)
#include "heat_hand_adjoint.h"

// du0 += d sum(duT .* uT) / d u0 of heat(): this rank's part, every rank calling it
__attribute__((noinline)) static void hand_gradient(const double *u0, double *du0, const double *duT, int n, int steps,
                                                    int rank, int size) {
    hand_tape_for(n, steps);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    for (int i = 0; i < n; i++)
        a[i + 1] = u0[i];
    for (int t = 0; t < steps; t++) {
        MPI_Sendrecv(&a[n], 1, MPI_DOUBLE, right, 0, &a[0], 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(&a[1], 1, MPI_DOUBLE, left, 1, &a[n + 1], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        hand_step_taped(a, b, hand_tape + (size_t)t * n, n);
        double *s = a;
        a = b;
        b = s;
    }
    free(a);
    free(b);
    // da: the adjoint of the state a step reads, db: of the state it writes
    double *da = calloc(n + 2, sizeof(double)), *db = calloc(n + 2, sizeof(double)), got;
    for (int i = 0; i < n; i++)
        da[i + 1] += duT[i];
    for (int t = steps - 1; t >= 0; t--) {
        double *s = da;
        da = db;
        db = s;
        hand_step_adjoint(hand_tape + (size_t)t * n, da, db, n);
        // a[n + 1] came from the right neighbour's a[1]: its adjoint goes back there, and
        // the left neighbour's adjoint of our a[1] comes in
        MPI_Sendrecv(&da[n + 1], 1, MPI_DOUBLE, right, 1, &got, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        da[1] += got;
        da[n + 1] = 0;
        // a[0] came from the left neighbour's a[n]
        MPI_Sendrecv(&da[0], 1, MPI_DOUBLE, left, 0, &got, 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        da[n] += got;
        da[0] = 0;
    }
    for (int i = 0; i < n; i++)
        du0[i] += da[i + 1];
    free(da);
    free(db);
}

static double start(int i, int total) { return 0.5 + 0.4 * sin(6.283185307179586 * i / total) + 0.05 * cos(0.37 * i); }
static double weight(int i) { return 1.0 + 0.001 * (i % 97); }

static int cmp(const void *a, const void *b) {
    double d = *(const double *)a - *(const double *)b;
    return (d > 0) - (d < 0);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 20000, steps = argc > 2 ? atoi(argv[2]) : 200;
    int rounds = argc > 3 ? atoi(argv[3]) : 9, total = n * size, first = rank * n;
    double *u0 = malloc(n * sizeof(double)), *du0 = calloc(n, sizeof(double));
    double *uT = malloc(n * sizeof(double)), *duT = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) {
        u0[i] = start(first + i, total);
        duT[i] = weight(first + i);
    }
    __enzyme_autodiff((void *)heat, enzyme_dup, u0, du0, enzyme_dupnoneed, uT, duT, enzyme_const, n, enzyme_const,
                      steps, enzyme_const, rank, enzyme_const, size);

    // the serial gradient over the whole domain, on every rank; this rank's slice compared
    double *g0 = malloc(total * sizeof(double)), *dg0 = calloc(total, sizeof(double));
    double *gT = malloc(total * sizeof(double)), *dgT = malloc(total * sizeof(double));
    for (int i = 0; i < total; i++) {
        g0[i] = start(i, total);
        dgT[i] = weight(i);
    }
    __enzyme_autodiff((void *)heat_serial, enzyme_dup, g0, dg0, enzyme_dupnoneed, gT, dgT, enzyme_const, total,
                      enzyme_const, steps);
    double largest = 0, diff = 0, all_largest, all_diff;
    for (int i = 0; i < n; i++) {
        largest = fmax(largest, fabs(dg0[first + i]));
        diff = fmax(diff, fabs(du0[i] - dg0[first + i]));
    }
    // the hand-written adjoint against zymase's distributed gradient
    double *dh = calloc(n, sizeof(double)), hand_diff = 0, all_hand_diff;
    for (int i = 0; i < n; i++)
        duT[i] = weight(first + i);
    hand_gradient(u0, dh, duT, n, steps, rank, size);
    for (int i = 0; i < n; i++)
        hand_diff = fmax(hand_diff, fabs(dh[i] - du0[i]));
    MPI_Allreduce(&largest, &all_largest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&diff, &all_diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&hand_diff, &all_hand_diff, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    // rounds alternate: the distributed primal and gradient (times of this rank, and of the
    // slowest rank), then the serial program over n cells on every rank at once (the
    // engine's gradient/primal without communication, under the same load), then the
    // hand-written adjoint of the distributed program (slowest rank and this rank's)
    enum { PRIMAL, GRADIENT, SERIAL_PRIMAL, SERIAL_GRADIENT, HAND, OWN_PRIMAL, OWN_GRADIENT, OWN_HAND, COLUMNS };
    double *t[COLUMNS];
    for (int c = 0; c < COLUMNS; c++)
        t[c] = malloc(rounds * sizeof(double));
    for (int k = 0; k < rounds; k++) {
        for (int c = PRIMAL; c <= HAND; c++) {
            for (int i = 0; i < n; i++)
                duT[i] = weight(first + i);
            memset(du0, 0, n * sizeof(double));
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (c == SERIAL_GRADIENT)
                __enzyme_autodiff((void *)heat_serial, enzyme_dup, u0, du0, enzyme_dupnoneed, uT, duT, enzyme_const,
                                  n, enzyme_const, steps);
            else if (c == SERIAL_PRIMAL)
                heat_serial(u0, uT, n, steps);
            else if (c == GRADIENT)
                __enzyme_autodiff((void *)heat, enzyme_dup, u0, du0, enzyme_dupnoneed, uT, duT, enzyme_const, n,
                                  enzyme_const, steps, enzyme_const, rank, enzyme_const, size);
            else if (c == HAND)
                hand_gradient(u0, du0, duT, n, steps, rank, size);
            else
                heat(u0, uT, n, steps, rank, size);
            double mine = MPI_Wtime() - t0, slowest;
            MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            int serial = c == SERIAL_PRIMAL || c == SERIAL_GRADIENT;
            t[c][k] = serial ? mine : slowest;
            if (!serial)
                t[c == PRIMAL ? OWN_PRIMAL : c == GRADIENT ? OWN_GRADIENT : OWN_HAND][k] = mine;
        }
    }
    double med[COLUMNS];
    for (int c = 0; c < COLUMNS; c++) {
        qsort(t[c], rounds, sizeof(double), cmp);
        med[c] = t[c][rounds / 2];
    }
    // per rank: this rank's gradient (and hand adjoint) over this rank's primal
    double own[2] = {med[OWN_GRADIENT] / med[OWN_PRIMAL], med[OWN_HAND] / med[OWN_PRIMAL]}, lowest[2], highest[2];
    MPI_Allreduce(own, lowest, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(own, highest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int ok = all_diff <= 1e-12 * all_largest && all_hand_diff <= 1e-12 * all_largest;
    if (rank == 0) {
        printf("ranks %d, cells per rank %d, steps %d: gradient vs serial gradient: max |diff| %.3g "
               "(largest entry %.3g), hand-written vs gradient %.3g %s\n", size, n, steps, all_diff, all_largest,
               all_hand_diff, ok ? "ok" : "FAIL");
        printf("medians of %d: primal %.4f s, gradient %.4f s (slowest rank): gradient/primal %.2f; "
               "per rank %.2f..%.2f\n", rounds, med[PRIMAL], med[GRADIENT], med[GRADIENT] / med[PRIMAL], lowest[0],
               highest[0]);
        printf("hand-written adjoint (reference): %.4f s (slowest rank): hand/primal %.2f; per rank %.2f..%.2f; "
               "gradient/hand %.2f\n", med[HAND], med[HAND] / med[PRIMAL], lowest[1], highest[1],
               med[GRADIENT] / med[HAND]);
        printf("serial program, n cells on each rank at once: primal %.4f s, gradient %.4f s: gradient/primal %.2f\n",
               med[SERIAL_PRIMAL], med[SERIAL_GRADIENT], med[SERIAL_GRADIENT] / med[SERIAL_PRIMAL]);
    }
    MPI_Finalize();
    return !ok;
}
