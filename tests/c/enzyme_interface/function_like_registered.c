/* Functions registered with Enzyme's globals __enzyme_function_like[2] = {f, "name"}
   (any suffix): each call is differentiated with the derivative of the named libm
   function at the call's argument, in reverse and forward mode and in a loop.
   Guards issue 24 item 2 (function_like, global spelling). */
#include <math.h>
#include <stdio.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);

static int failures;

static void check(const char *what, double at, double got, double want) {
    int ok = fabs(got - want) <= 1e-9 * fmax(1.0, fabs(want));
    printf("%s %s at %g: got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, at, got, want);
    failures += !ok;
}

/* log1p by a table-free approximation; differentiated as log1p: 1 / (1 + x) */
double approx_log1p(double x) { return x - x * x / 2 + x * x * x / 3; }
/* a power of its own; differentiated as pow: (y x^(y-1), x^y log x) at the result */
double approx_pow(double x, double y) { return exp(y * log(x)) * 1.0000001; }

void *__enzyme_function_like[2] = {(void *)approx_log1p, "log1p"};
void *__enzyme_function_like_pow[2] = {(void *)approx_pow, (void *)"pow"};

/* f = 3 approx_log1p(x^2): df = 6x / (1 + x^2) */
double scaled(double x) { return 3 * approx_log1p(x * x); }

/* f = sum_k approx_log1p(k x): df = sum_k k / (1 + k x) */
double sum_logs(double x) {
    double s = 0;
    for (int k = 1; k <= 4; k++) s += approx_log1p(k * x);
    return s;
}

/* f = approx_pow(x, 2.5): df = 2.5 x^1.5 by pow's rule */
double power(double x) { return approx_pow(x, 2.5); }

int main(void) {
    double xs[] = {0.25, 0.5, 2.0};
    for (int i = 0; i < 3; i++) {
        double x = xs[i];
        check("rev scaled", x, __enzyme_autodiff((void *)scaled, x), 6 * x / (1 + x * x));
        check("fwd scaled", x, __enzyme_fwddiff((void *)scaled, x, 1.0), 6 * x / (1 + x * x));
        double want = 0;
        for (int k = 1; k <= 4; k++) want += k / (1 + k * x);
        check("rev sum_logs", x, __enzyme_autodiff((void *)sum_logs, x), want);
        check("fwd sum_logs", x, __enzyme_fwddiff((void *)sum_logs, x, 1.0), want);
        check("rev power", x, __enzyme_autodiff((void *)power, x), 2.5 * pow(x, 1.5));
        check("fwd power", x, __enzyme_fwddiff((void *)power, x, 1.0), 2.5 * pow(x, 1.5));
    }
    printf("%d failure(s)\n", failures);
    return failures != 0;
}
