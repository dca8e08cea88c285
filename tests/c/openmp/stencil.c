// OpenMP (issue 27 item 1): a stencil whose iterations read their neighbours x[i-1],
// x[i+1], so that in reverse mode adjoints scatter into elements other iterations also
// update (atomic adds); a time loop runs the parallel step many times (one parallel region
// per step, each reversed by its own threads). Against the serial twin's derivative and
// central finite differences; OMP_NUM_THREADS=1, 2, 4.
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    printf("%s %s at %d: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
}

enum { N = 600 };

// nonlinear diffusion: steps of u <- u + k * (u[i-1] - 2 u[i] + u[i+1]) + r * u^2 (1 - u)
void heat_par(double *u, double *tmp, int n, int steps) {
    for (int s = 0; s < steps; s++) {
#pragma omp parallel for
        for (int i = 1; i < n - 1; i++)
            tmp[i] = u[i] + 0.2 * (u[i - 1] - 2 * u[i] + u[i + 1]) + 0.1 * u[i] * u[i] * (1 - u[i]);
#pragma omp parallel for
        for (int i = 1; i < n - 1; i++) u[i] = tmp[i];
    }
}

void heat_ser(double *u, double *tmp, int n, int steps) {
    for (int s = 0; s < steps; s++) {
        for (int i = 1; i < n - 1; i++)
            tmp[i] = u[i] + 0.2 * (u[i - 1] - 2 * u[i] + u[i + 1]) + 0.1 * u[i] * u[i] * (1 - u[i]);
        for (int i = 1; i < n - 1; i++) u[i] = tmp[i];
    }
}

static void initial(double *u, int n) {
    for (int i = 0; i < n; i++) u[i] = 0.5 + 0.4 * sin(0.05 * i);
}

// the weighted sum of the final state, as a function of u0[i]
static double loss(const double *u0, int n, int steps) {
    double u[N], tmp[N] = {0}, s = 0;
    for (int i = 0; i < n; i++) u[i] = u0[i];
    heat_par(u, tmp, n, steps);
    for (int i = 0; i < n; i++) s += u[i] * cos(0.01 * i);
    return s;
}

int main(int argc, char **argv) {
    (void)argv;
    int n = N - 2 + argc, steps = 19 + argc;
    double u0[N], u[N], du[N], tmp[N] = {0}, dtmp[N] = {0}, us[N], dus[N];
    initial(u0, n);
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    for (int i = 0; i < n; i++) {
        u[i] = us[i] = u0[i];
        du[i] = dus[i] = cos(0.01 * i);
    }
    __enzyme_autodiff((void *)heat_par, enzyme_dup, u, du, enzyme_dup, tmp, dtmp, enzyme_const, n, enzyme_const, steps);
    for (int i = 0; i < n; i++) dtmp[i] = 0;
    __enzyme_autodiff((void *)heat_ser, enzyme_dup, us, dus, enzyme_dup, tmp, dtmp, enzyme_const, n, enzyme_const, steps);
    for (int i = 0; i < n; i++) check("reverse vs serial", i, du[i], dus[i], 1e-12);
    for (int i = 0; i < n; i += 41) {
        double h = 1e-6, up[N], um[N];
        for (int k = 0; k < n; k++) up[k] = um[k] = u0[k];
        up[i] += h;
        um[i] -= h;
        check("reverse vs finite difference", i, du[i], (loss(up, n, steps) - loss(um, n, steps)) / (2 * h), 1e-6);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
