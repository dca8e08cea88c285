// The hand-written adjoint of one step of the heat equation (bench/heat_serial.c and
// bench/mpi_heat.c: REFERENCES, the floor a taped derivative of their programs can be held
// to, not workloads). The including file defines R and CUBIC and the step
// v[i] = u[i] + R (u[i-1] - 2 u[i] + u[i+1]) - CUBIC u[i]^3, i = 1..n.
#ifndef HEAT_HAND_ADJOINT_H
#define HEAT_HAND_ADJOINT_H

// The tape of states, kept between calls (as zymase's is)
static double *hand_tape;
static size_t hand_tape_doubles;

// The tape of `steps` steps of n cells, grown when too small
static double *hand_tape_for(int n, int steps) {
    size_t need = (size_t)n * steps;
    if (need > hand_tape_doubles) {
        free(hand_tape);
        hand_tape = malloc(need * sizeof(double));
        hand_tape_doubles = need;
    }
    return hand_tape;
}

// One step of the forward sweep: v = step(u), u[1..n] stored into T
static void hand_step_taped(const double *restrict u, double *restrict v, double *restrict T, int n) {
    for (int i = 1; i <= n; i++) {
        T[i - 1] = u[i];
        v[i] = u[i] + R * (u[i - 1] - 2 * u[i] + u[i + 1]) - CUBIC * u[i] * u[i] * u[i];
    }
}

// The adjoint of one step v = step(u) into du[0..n+1] (dv[1..n] read, then zeroed); T holds
// u[1..n] (NULL: the cubic term's partial left out, heat_serial.c's hand-linear). Every du
// element takes its three contributions at once (no element is added to twice in one pass).
#define PARTIAL(u) (1 - 2 * R - 3 * CUBIC * (u) * (u))
static void hand_step_adjoint(const double *restrict T, double *restrict du, double *restrict dv, int n) {
    du[0] += R * dv[1];
    du[n + 1] += R * dv[n];
    if (n == 1) {
        du[1] += (T ? PARTIAL(T[0]) : 1 - 2 * R) * dv[1];
    } else if (T) {
        du[1] += PARTIAL(T[0]) * dv[1] + R * dv[2];
        du[n] += PARTIAL(T[n - 1]) * dv[n] + R * dv[n - 1];
        for (int i = 2; i < n; i++)
            du[i] += PARTIAL(T[i - 1]) * dv[i] + R * (dv[i - 1] + dv[i + 1]);
    } else {
        du[1] += (1 - 2 * R) * dv[1] + R * dv[2];
        du[n] += (1 - 2 * R) * dv[n] + R * dv[n - 1];
        for (int i = 2; i < n; i++)
            du[i] += (1 - 2 * R) * dv[i] + R * (dv[i - 1] + dv[i + 1]);
    }
    for (int i = 1; i <= n; i++)
        dv[i] = 0;
}
#undef PARTIAL

#endif
