// std::complex<double> functions in the active path (issue 24 item 3): *, / and
// std::exp, log, sqrt, sin, cos, tan, sinh, cosh, tanh and pow, which call __muldc3,
// __divdc3 and C's cexp, clog, ... (each returns {double, double}). Every derivative is
// checked against a central difference, in reverse and forward mode.
#include <cmath>
#include <complex>
#include <cstdio>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
typedef std::complex<double> C;
static int failures = 0;
static double fd(double (*f)(double), double x) { double h = 1e-6; return (f(x + h) - f(x - h)) / (2 * h); }
template <double (*f)(double)> static void check(const char *what, double x) {
  double want = fd(f, x);
  double r = __enzyme_autodiff((void *)f, x);
  double t = __enzyme_fwddiff((void *)f, x, 1.0);
  for (double got : {r, t}) {
    bool ok = std::fabs(got - want) <= 1e-6 * std::fmax(1.0, std::fabs(want));
    if (!ok) failures++;
    std::printf("%s %s at %g: got %.12g want %.12g\n", ok ? "ok" : "FAIL", what, x, got, want);
  }
}
double mul(double x) { C z(x, 2.0), w(1.0, x * x); return std::abs(z * w * z); }
double div_(double x) { C z(x, 2.0), w(1.0, x); return std::real(z / w) + 3 * std::imag(w / z); }
double exp_(double x) { C z(0.5 * x, x); return std::imag(std::exp(z)) + std::real(std::exp(z * z)); }
double log_(double x) { C z(x, 1.0 + x); return std::real(std::log(z)) * std::imag(std::log(z)); }
double sqrt_(double x) { C z(x, -1.5); return std::imag(std::sqrt(z)) + std::norm(std::sqrt(z * z + 1.0)); }
double trig(double x) { C z(x, 0.3 * x); return std::real(std::sin(z)) + std::imag(std::cos(z)) + std::real(std::tan(z)); }
double hyp(double x) { C z(0.2 * x, x); return std::imag(std::sinh(z)) + std::real(std::cosh(z)) + std::imag(std::tanh(z)); }
double pow_(double x) { C z(x, 0.5), w(0.7, x); return std::real(std::pow(z, w)); }
int main() {
  for (double x : {0.4, 1.3}) {
    check<mul>("mul", x); check<div_>("div", x); check<exp_>("exp", x); check<log_>("log", x);
    check<sqrt_>("sqrt", x); check<trig>("trig", x); check<hyp>("hyp", x); check<pow_>("pow", x);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
