"""Rules for calls by function name: C's libm (``sin``, ``sinf``, ``fmod``, ...) and
LLVM intrinsics (by base name: ``llvm.fmuladd.f64`` -> ``fmuladd``)."""

from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules.scalar import MATH

for _name, _rule in MATH.items():
    REGISTRY.register_function(_name, _rule)
    # the float and long double (x86_fp80) variants in C: sinf, sinl, powf, powl, ...
    REGISTRY.register_function(_name + "f", _rule)
    REGISTRY.register_function(_name + "l", _rule)

# Numba lowers math.gamma and math.ldexp to its own C helpers rather than libm's
for _suffix in ("", "f"):
    REGISTRY.register_function("numba_gamma" + _suffix, MATH["tgamma"])
    REGISTRY.register_function("numba_ldexp" + _suffix, MATH["ldexp"])

# glibc's internal spelling of exp10, which compilers may emit for it
for _suffix in ("", "f", "l"):
    REGISTRY.register_function("__exp10" + _suffix, MATH["exp10"])

# The *_finite entry points that older glibc headers map math functions to under
# -ffast-math (__exp_finite, __powf_finite, __log10l_finite, ...): the same functions,
# for arguments where they are finite. Only the names glibc defines (lgamma_r, gamma_r,
# scalb and the Bessel functions have no rule and stay refused).
for _name in ("acos", "acosh", "asin", "atan2", "atanh", "cosh", "exp", "exp10", "exp2", "fmod", "hypot",
              "log", "log10", "log2", "pow", "remainder", "sinh", "sqrt"):
    for _suffix in ("", "f", "l"):
        REGISTRY.register_function(f"__{_name}{_suffix}_finite", MATH[_name])

# C's cabs(double _Complex z), which std::abs(std::complex<double>) calls: x86-64 passes
# z as its two doubles, so the call is hypot(re, im). (cabsf takes a <2 x float> and
# cabsl its parts in memory: they keep no rule and stay refused.)
REGISTRY.register_function("cabs", MATH["hypot"])

# The x86 SSE/AVX packed maximum and minimum (_mm_max_pd, _mm256_min_ps, ...): lane by lane
# a > b ? a : b and a < b ? a : b (the second operand on ties and NaNs), which is what the
# fmax and fmin rules give the derivative to.
for _kind in ("max", "min"):
    for _name in (f"x86.sse.{_kind}.ps", f"x86.sse2.{_kind}.pd", f"x86.avx.{_kind}.ps.256",
                  f"x86.avx.{_kind}.pd.256"):
        REGISTRY.register_function(_name, MATH[f"f{_kind}"])
