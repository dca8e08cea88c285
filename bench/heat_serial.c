// Serial 1-D heat equation (bench/mpi_heat.c's serial program): gradient / primal in
// process CPU time, the minimum of ROUNDS runs each, alternating (issue 27: the reverse of
// the stencil loop, src/zymase/autodiff/stencil_gather.py). A/B: build once more with
// ZYMASE_NO_GATHER=1 in the environment (and --no-cache) and alternate the two binaries.
//
//   zymase cc -O2 bench/heat_serial.c -o /tmp/heat_serial -lm && /tmp/heat_serial 100000 100 7
//
// (arguments: cells, steps, rounds; -DCUBIC=0.05 adds mpi_heat.c's nonlinear term, whose
// derivative needs the taped states.) The
// last number printed is a checksum of the gradient, equal across builds.
//
// Two hand-written adjoints run in the same rounds (REFERENCES, not workloads; compiled in
// this file with the same flags and layout):
//   hand         the floor of a derivative that tapes what the reverse needs (the
//                nonlinear variant's, -DCUBIC=c): the forward sweep is the primal storing
//                each step's state u (n doubles a step, in a tape kept between calls, as
//                zymase's is), the reverse sweep reads it back for the cubic term's partial
//                1 - 2R - 3 CUBIC u^2 in the fastest form found by hand (the adds gathered
//                per element, the shadow zeroing after them); its forward and reverse
//                sweeps are also timed apart ("fwd", "rev"). In the default (linear) build it
//                tapes what the derivative does not need: an upper reference there.
//   hand-linear  the reverse sweep alone, without the cubic term's partial and so without
//                the tape or a forward sweep: the floor of the default build (the heat
//                equation), whose derivative it is; for the -DCUBIC variant it is NOT the
//                derivative (it leaves the term out).
// Both are checked against zymase's gradient (relative difference printed).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
void heat_serial(const double *u0, double *uT, int n, int steps) {
    double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
    for (int i = 0; i < n; i++) a[i + 1] = u0[i];
    for (int t = 0; t < steps; t++) {
        a[0] = a[n];
        a[n + 1] = a[1];
        step(a, b, n);
        double *s = a; a = b; b = s;
    }
    for (int i = 0; i < n; i++) uT[i] = a[i + 1];
    free(a);
    free(b);
}

static double cpu(void) { struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts); return ts.tv_sec + 1e-9 * ts.tv_nsec; }

// REFERENCE (hand-written adjoint, see the header)
#include "heat_hand_adjoint.h"
static double hand_fwd_time, hand_rev_time;  // of the last hand_gradient call

// du0 += d sum(duT .* uT) / d u0, uT = heat_serial(u0): with the tape of states (taped = 1),
// or the linear part alone without a forward sweep (taped = 0, hand-linear)
__attribute__((noinline)) static void hand_gradient(const double *u0, double *du0, const double *duT, int n, int steps,
                                                    int taped) {
    double t0 = cpu();
    if (taped) {
        hand_tape_for(n, steps);
        double *a = malloc((n + 2) * sizeof(double)), *b = malloc((n + 2) * sizeof(double));
        for (int i = 0; i < n; i++) a[i + 1] = u0[i];
        for (int t = 0; t < steps; t++) {
            a[0] = a[n];
            a[n + 1] = a[1];
            hand_step_taped(a, b, hand_tape + (size_t)t * n, n);
            double *s = a; a = b; b = s;
        }
        free(a);
        free(b);
    }
    double t1 = cpu();
    // da: the adjoint of the state a step reads, db: of the state it writes
    double *da = calloc(n + 2, sizeof(double)), *db = calloc(n + 2, sizeof(double));
    for (int i = 0; i < n; i++) da[i + 1] += duT[i];
    for (int t = steps - 1; t >= 0; t--) {
        double *s = da; da = db; db = s;
        hand_step_adjoint(taped ? hand_tape + (size_t)t * n : NULL, da, db, n);
        da[1] += da[n + 1];  // a[n + 1] = a[1]
        da[n + 1] = 0;
        da[n] += da[0];  // a[0] = a[n]
        da[0] = 0;
    }
    for (int i = 0; i < n; i++) du0[i] += da[i + 1];
    free(da);
    free(db);
    hand_fwd_time = t1 - t0;
    hand_rev_time = cpu() - t1;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000, steps = argc > 2 ? atoi(argv[2]) : 100, rounds = argc > 3 ? atoi(argv[3]) : 7;
    double *u0 = malloc(n * 8), *du0 = calloc(n, 8), *uT = malloc(n * 8), *duT = malloc(n * 8);
    double *dz = malloc(n * 8), *dh = malloc(n * 8);
    for (int i = 0; i < n; i++) u0[i] = 0.5 + 0.4 * sin(0.01 * i);
    // best times: primal, zymase's gradient, hand, hand's forward and reverse sweeps, hand-linear
    double bp = 1e9, bg = 1e9, bh = 1e9, bhf = 1e9, bhr = 1e9, bl = 1e9, chk = 0, dhand = 0, dlin = 0, scale = 0;
    for (int k = 0; k < rounds; k++) {
        double t0 = cpu();
        heat_serial(u0, uT, n, steps);
        double t1 = cpu();
        for (int i = 0; i < n; i++) duT[i] = 1.0 + 0.001 * (i % 97);
        memset(du0, 0, n * 8);
        double t2 = cpu();
        __enzyme_autodiff((void *)heat_serial, enzyme_dup, u0, du0, enzyme_dupnoneed, uT, duT, enzyme_const, n, enzyme_const, steps);
        double t3 = cpu();
        memcpy(dz, du0, n * 8);
        if (t1 - t0 < bp) bp = t1 - t0;
        if (t3 - t2 < bg) bg = t3 - t2;
        for (int linear = 0; linear < 2; linear++) {
            for (int i = 0; i < n; i++) duT[i] = 1.0 + 0.001 * (i % 97);
            memset(dh, 0, n * 8);
            double t4 = cpu();
            hand_gradient(u0, dh, duT, n, steps, !linear);
            double t5 = cpu();
            double worst = 0;
            for (int i = 0; i < n; i++) {
                worst = fmax(worst, fabs(dh[i] - dz[i]));
                scale = fmax(scale, fabs(dz[i]));
            }
            if (linear) {
                if (t5 - t4 < bl) bl = t5 - t4;
                dlin = fmax(dlin, worst);
            } else {
                if (t5 - t4 < bh) bh = t5 - t4;
                if (hand_fwd_time < bhf) bhf = hand_fwd_time;
                if (hand_rev_time < bhr) bhr = hand_rev_time;
                dhand = fmax(dhand, worst);
            }
        }
    }
    for (int i = 0; i < n; i++) chk += dz[i] * (1 + i % 7);
    printf("primal %.4f gradient %.4f ratio %.2f | hand %.4f ratio %.2f (fwd %.4f rev %.4f) gradient/hand %.2f | "
           "hand-linear %.4f ratio %.2f | hand, hand-linear vs gradient: max rel diff %.1e %.1e | check %.12g\n",
           bp, bg, bg / bp, bh, bh / bp, bhf, bhr, bg / bh, bl, bl / bp, dhand / scale, dlin / scale, chk);
    return dhand > 1e-12 * scale;
}
