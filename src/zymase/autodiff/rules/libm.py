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
