// std::complex<float> in the active path (issue 24 item 3). On x86-64 a float complex
// travels as one <2 x float>: clang calls __mulsc3/__divsc3 for * and /, and cexpf,
// clogf, csqrtf, cpowf, csinf, ..., cabsf and cargf take and return <2 x float>. Each
// function is written once as a template: the derivative of the float instance is
// checked against the derivative of the double instance (itself checked against a
// central difference), in reverse and forward mode.
#include <cmath>
#include <complex>
#include <cstdio>
extern float __enzyme_autodiff(void *, ...);
extern float __enzyme_fwddiff(void *, ...);
extern double __enzyme_autodiff(void *, double);
extern double __enzyme_fwddiff(void *, double, double);
static int failures = 0;

template <typename T> T mul(T x) { std::complex<T> z(x, 2), w(1, x * x); return std::abs(z * w * z); }
template <typename T> T div_(T x) { std::complex<T> z(x, 2), w(1, x); return std::real(z / w) + 3 * std::imag(w / z); }
template <typename T> T exp_log(T x) {
  std::complex<T> z(T(0.5) * x, x);
  return std::imag(std::exp(z)) + std::real(std::log(z * z + T(1)));
}
template <typename T> T sqrt_pow(T x) {
  std::complex<T> z(x, T(-1.5)), w(T(0.7), x);
  return std::imag(std::sqrt(z)) + std::real(std::pow(z, w));
}
template <typename T> T trig(T x) {
  std::complex<T> z(x, T(0.3) * x);
  return std::real(std::sin(z)) + std::imag(std::cos(z)) + std::real(std::tan(z)) + std::imag(std::tanh(z));
}
template <typename T> T abs_arg(T x) { std::complex<T> z(x - T(0.2), T(1) - x * x); return std::abs(z) * std::arg(z); }

template <float (*ff)(float), double (*fd)(double)> static void check(const char *what, double x) {
  double h = 1e-6, diff = (fd(x + h) - fd(x - h)) / (2 * h);
  double want = __enzyme_autodiff((void *)fd, x);
  double want_fwd = __enzyme_fwddiff((void *)fd, x, 1.0);
  float r = __enzyme_autodiff((void *)ff, (float)x);
  float t = __enzyme_fwddiff((void *)ff, (float)x, 1.0f);
  bool double_ok = std::fabs(want - diff) <= 1e-6 * std::fmax(1.0, std::fabs(diff))
                 && std::fabs(want_fwd - want) <= 1e-9 * std::fmax(1.0, std::fabs(want));
  bool float_ok = std::fabs(r - want) <= 2e-5 * std::fmax(1.0, std::fabs(want))
                  && std::fabs(t - want) <= 2e-5 * std::fmax(1.0, std::fabs(want));
  if (!double_ok || !float_ok) failures++;
  std::printf("%s %s at %g: float reverse %.8g forward %.8g, double %.12g, difference %.12g\n",
              double_ok && float_ok ? "ok" : "FAIL", what, x, r, t, want, diff);
}

int main() {
  for (double x : {0.4, 1.3}) {
    check<mul<float>, mul<double>>("mul", x);
    check<div_<float>, div_<double>>("div", x);
    check<exp_log<float>, exp_log<double>>("exp_log", x);
    check<sqrt_pow<float>, sqrt_pow<double>>("sqrt_pow", x);
    check<trig<float>, trig<double>>("trig", x);
    check<abs_arg<float>, abs_arg<double>>("abs_arg", x);
  }
  std::printf("%d failure(s)\n", failures);
  return failures != 0;
}
