// The "library" half of registered_gradient_external.c: compiled separately, so the
// differentiated file sees only a declaration of norm2 (as with a real library).
#include <math.h>

double norm2(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}
