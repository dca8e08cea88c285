/* Time loops for checkpointing under a tape limit (issue 27 item 4); built by
   tests/test_c_checkpoint.py without a limit and with several `--tape-limit`s, which
   compares the printed gradients bit for bit across the builds. Each gradient is also
   checked against central finite differences here.
   Usage: time_loops [nsteps]   (the trip count is known only at run time) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_out, enzyme_dup, enzyme_dupnoneed;

#define NCELL 16

/* an array loop with an inner loop: explicit Euler for u_t = D u_xx + r u (1 - u), the
   two buffers swapped each step (carried pointers and the arrays they point to); the
   objective's loop reads a constant argument (a pointer without a shadow) */
double reaction_diffusion(double D, double r, const double *u0, const double *w, int nsteps) {
    double *u = malloc(sizeof(double) * NCELL);
    double *v = malloc(sizeof(double) * NCELL);
    memcpy(u, u0, sizeof(double) * NCELL);
    for (int s = 0; s < nsteps; s++) {
        for (int i = 0; i < NCELL; i++) {
            double left = i > 0 ? u[i - 1] : u[i];
            double right = i < NCELL - 1 ? u[i + 1] : u[i];
            v[i] = u[i] + 1e-3 * (D * (left - 2.0 * u[i] + right) * NCELL + r * u[i] * (1.0 - u[i]));
        }
        double *t = u;
        u = v;
        v = t;
    }
    double out = 0.0;
    for (int i = 0; i < NCELL; i++)
        out += w[i] * u[i];
    free(u);
    free(v);
    return out;
}

/* registers and an array carried together: a damped oscillator driving a local array */
double oscillator(double k, double c, int nsteps) {
    double x = 1.0, p = 0.0, energy = 0.0;
    double trace[4] = {0.0, 0.0, 0.0, 0.0};
    for (int s = 0; s < nsteps; s++) {
        double a = -k * x - c * p;
        p += 1e-3 * a;
        x += 1e-3 * p;
        trace[s & 3] = 0.5 * trace[(s + 1) & 3] + sin(x);
        energy += 1e-3 * (p * p + k * x * x);
    }
    return energy + trace[0] * trace[1] + trace[2] - trace[3];
}

static double rd_at(const double *p, const double *u0, const double *w, int n) {
    return reaction_diffusion(p[0], p[1], u0, w, n);
}

/* the process's peak resident memory in KiB (VmHWM: of this program's own address space,
   unlike getrusage's ru_maxrss, which keeps the high-water mark of the process that forked
   it) */
static long peak_rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static int failures;
static void check(const char *what, double got, double want) {
    double tol = 1e-6 * (1.0 + fabs(want));
    if (!(fabs(got - want) <= tol)) {
        printf("FAIL %s: %.17g, finite differences %.17g\n", what, got, want);
        failures++;
    }
}

/* the gradients, taken in a static function that only main calls (code zymase's
   differentiated part does not include) */
static void gradients(const double *p, double *u0, double *du0, const double *weights, int nsteps, double *g) {
    g[0] = __enzyme_autodiff((void *)reaction_diffusion, enzyme_out, p[0], enzyme_const, p[1],
                             enzyme_dup, u0, du0, enzyme_const, weights, enzyme_const, nsteps);
    g[1] = __enzyme_autodiff((void *)reaction_diffusion, enzyme_const, p[0], enzyme_out, p[1],
                             enzyme_const, u0, enzyme_const, weights, enzyme_const, nsteps);
    g[2] = __enzyme_autodiff((void *)oscillator, 2.0, enzyme_const, 0.1, enzyme_const, nsteps);
    g[3] = __enzyme_autodiff((void *)oscillator, enzyme_const, 2.0, 0.1, enzyme_const, nsteps);
}

int main(int argc, char **argv) {
    int nsteps = argc > 1 ? atoi(argv[1]) : 3000;
    double u0[NCELL], du0[NCELL] = {0}, weights[NCELL], g[4];
    for (int i = 0; i < NCELL; i++) {
        u0[i] = 0.5 + 0.4 * sin(0.7 * i);
        weights[i] = i + 1;
    }
    double p[2] = {0.3, 1.5};
    gradients(p, u0, du0, weights, nsteps, g);
    double dD = g[0], dr = g[1], dk = g[2], dc = g[3];
    printf("grad %a %a %a %a", dD, dr, dk, dc);
    for (int i = 0; i < NCELL; i++)
        printf(" %a", du0[i]);
    printf("\npeak_rss_kib %ld\n", peak_rss_kib());
    const double h = 1e-6;
    double q[2];
    for (int j = 0; j < 2; j++) {
        memcpy(q, p, sizeof q);
        q[j] = p[j] + h;
        double fp = rd_at(q, u0, weights, nsteps);
        q[j] = p[j] - h;
        check(j ? "d/dr" : "d/dD", j ? dr : dD, (fp - rd_at(q, u0, weights, nsteps)) / (2 * h));
    }
    for (int i = 0; i < NCELL; i += 5) {
        double keep = u0[i];
        u0[i] = keep + h;
        double fp = rd_at(p, u0, weights, nsteps);
        u0[i] = keep - h;
        double fm = rd_at(p, u0, weights, nsteps);
        u0[i] = keep;
        check("d/du0", du0[i], (fp - fm) / (2 * h));
    }
    check("d/dk", dk, (oscillator(2.0 + h, 0.1, nsteps) - oscillator(2.0 - h, 0.1, nsteps)) / (2 * h));
    check("d/dc", dc, (oscillator(2.0, 0.1 + h, nsteps) - oscillator(2.0, 0.1 - h, nsteps)) / (2 * h));
    return failures != 0;
}
