/* The reaction-diffusion step loop (Gray-Scott in 1-D, periodic) that
   bench/parity/reaction_diffusion.c (primal parity) and bench/vs_enzyme/reaction_diffusion.c
   (against Enzyme) differentiate: the step is its own function called from the time loop,
   buffers swapped each step. The including file may set RD_RESTRICT (default C's
   `restrict`) and RD_SIMULATE_LINKAGE (default external). */
#ifndef REACTION_DIFFUSION_H
#define REACTION_DIFFUSION_H
#ifndef RD_RESTRICT
#define RD_RESTRICT restrict
#endif
#ifndef RD_SIMULATE_LINKAGE
#define RD_SIMULATE_LINKAGE
#endif

static void rd_step(const double *RD_RESTRICT u, const double *RD_RESTRICT v, double *RD_RESTRICT un,
                    double *RD_RESTRICT vn, int n, double dt) {
    const double du = 0.16, dv = 0.08, feed = 0.035, kill = 0.065;
    for (int i = 0; i < n; i++) {
        int l = i == 0 ? n - 1 : i - 1, r = i == n - 1 ? 0 : i + 1;
        double uvv = u[i] * v[i] * v[i];
        un[i] = u[i] + dt * (du * (u[l] - 2.0 * u[i] + u[r]) - uvv + feed * (1.0 - u[i]));
        vn[i] = v[i] + dt * (dv * (v[l] - 2.0 * v[i] + v[r]) + uvv - (feed + kill) * v[i]);
    }
}

/* u and v (n each) hold the initial state and are overwritten; a and b are scratch. */
RD_SIMULATE_LINKAGE double simulate(double *u, double *v, double *a, double *b, int n, int steps) {
    for (int s = 0; s < steps; s++) {
        rd_step(u, v, a, b, n, 0.5);
        double *t = u; u = a; a = t;
        t = v; v = b; b = t;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += u[i] + 0.5 * v[i];
    return sum;
}
#endif
