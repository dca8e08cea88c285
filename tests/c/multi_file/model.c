/* Part of the three-file program of main.c: the differentiated function. */
double energy(const double *x, int i, int n);

static double square(double v) { return v * v; }

double loss(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += energy(x, i, n) + square(x[i] - 0.5);
    return s;
}
