// OpenMP (issue 27 item 1, performance): a radius-2 stencil over restrict arrays, whose
// reverse sweep recomputes the region and splits each thread's worksharing loop into the
// first and last 4 iterations of its chunk (adjoint adds atomic: neighbouring chunks' may
// touch the same elements) and the interior (plain adds). Team sizes 1 to 13 over arrays
// of 5 to 200 elements give chunks of 0, 1, 2, 3 ... iterations, shorter than the edges,
// empty interiors and single-iteration teams; each gradient is compared with the closed
// form, and repeated so that lost updates (an edge add made plain) have chances to show.
// OMP_NUM_THREADS=1, 2, 4 (tests/test_c_openmp.py, which also checks in the IR of
// recomputed.c's stencil that the edges keep their atomics and the interior has none).
#include <math.h>
#include <omp.h>
#include <stdio.h>

extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup, enzyme_dupnoneed;

static int failures;

static void check(const char *what, int at, double got, double want, double tol) {
    int ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
    if (!ok) failures++;
    if (!ok) printf("FAIL %s at %d: got %.17g want %.17g\n", what, at, got, want);
}

enum { N = 200 };

void stencil5(const double *restrict x, double *restrict out, int n) {
#pragma omp parallel for
    for (int i = 2; i < n - 2; i++)
        out[i] = 0.1 * x[i - 2] - 0.3 * x[i - 1] + x[i] * x[i] + 0.7 * x[i + 1] - 0.2 * x[i + 2] * x[i];
}

int main(void) {
    int team = 0;
#pragma omp parallel
#pragma omp single
    team = omp_get_num_threads();
    printf("threads %d\n", team);

    static const int sizes[] = {5, 6, 7, 9, 12, 17, 30, 64, 200};
    double x[N], dx[N], out[N], dout[N], want[N];
    int checked = 0;
    for (int threads = 1; threads <= 13; threads++) {
        omp_set_num_threads(threads);
        for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            int n = sizes[s];
            for (int i = 0; i < n; i++) x[i] = 0.3 + 0.5 * sin(0.7 * i + threads);
            // d/dx of sum_i w_i out_i, w_i = 1.5 + cos(0.3 i), term by term
            for (int j = 0; j < n; j++) want[j] = 0.0;
            for (int i = 2; i < n - 2; i++) {
                double w = 1.5 + cos(0.3 * i);
                want[i - 2] += 0.1 * w;
                want[i - 1] += -0.3 * w;
                want[i] += (2 * x[i] - 0.2 * x[i + 2]) * w;
                want[i + 1] += 0.7 * w;
                want[i + 2] += -0.2 * x[i] * w;
            }
            for (int rep = 0; rep < (n == 30 ? 50 : 3); rep++) {
                for (int i = 0; i < n; i++) {
                    dx[i] = 0.0;
                    out[i] = 0.0;
                    dout[i] = 1.5 + cos(0.3 * i);
                }
                __enzyme_autodiff((void *)stencil5, enzyme_dup, x, dx, enzyme_dup, out, dout, enzyme_const, n);
                for (int i = 0; i < n; i++) check("gradient vs closed form", threads * 1000 + i, dx[i], want[i], 1e-13);
                for (int i = 2; i < n - 2; i++)  // the primal result the gradient call also computes
                    check("primal", threads * 1000 + i, out[i],
                          0.1 * x[i - 2] - 0.3 * x[i - 1] + x[i] * x[i] + 0.7 * x[i + 1] - 0.2 * x[i + 2] * x[i],
                          1e-15);
                checked++;
            }
        }
    }
    printf("%d gradients, %d failures\n", checked, failures);
    return failures != 0;
}
