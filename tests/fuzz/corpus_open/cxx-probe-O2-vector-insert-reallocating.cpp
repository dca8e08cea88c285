// hand probe (session 30, probe2), not generated: std::vector<double>::insert that reallocates; at -O1/-O2 every element behind the insertion point gets derivative 0 (right at -O3, --no-preopt right). Build: zymase cc -O2 FILE -o prog && ./prog
#define N 5
#define K 1
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
extern "C" { extern int enzyme_dup, enzyme_const; void __enzyme_autodiff(void*, ...); }
static double f(double *x, int n);
static int check(int n, double *x0) {
    double x[16], dx[16] = {0};
    memcpy(x, x0, n * sizeof(double));
    __enzyme_autodiff((void*)f, enzyme_dup, x, dx, enzyme_const, n);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double h = 1e-6 * fmax(1.0, fabs(x0[i]));
        memcpy(x, x0, n * sizeof(double)); x[i] += h; double fp = f(x, n);
        memcpy(x, x0, n * sizeof(double)); x[i] -= h; double fm = f(x, n);
        double fd = (fp - fm) / (2 * h);
        double err = fabs(fd - dx[i]) / fmax(1.0, fabs(fd));
        if (err > 1e-5) { printf("BAD i=%d ad=%.10g fd=%.10g\n", i, dx[i], fd); bad = 1; }
    }
    printf(bad ? "WRONG\n" : "ok\n");
    return bad;
}
int main() { int n = 7; double x0[7]; for (int i = 0; i < n; i++) x0[i] = 0.3 + 0.17 * i - 0.05 * i * i; return check(n, x0); }

#include <vector>
static double f(double *x, int n) {
  std::vector<double> c(x, x + N); c.insert(c.begin() + K, 0.5);
  double r = 0; for (size_t i = 0; i < c.size(); i++) r += c[i] * (i + 1); return r;
}
