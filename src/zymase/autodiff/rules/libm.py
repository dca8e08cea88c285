"""Rules for calls by function name: C's libm (``sin``, ``sinf``, ``fmod``, ...) and
LLVM intrinsics (by base name: ``llvm.fmuladd.f64`` -> ``fmuladd``)."""

from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules.scalar import MATH

for _name, _rule in MATH.items():
    REGISTRY.register_function(_name, _rule)
    # float variants in C (sinf, powf, ...); long double is not supported.
    REGISTRY.register_function(_name + "f", _rule)
