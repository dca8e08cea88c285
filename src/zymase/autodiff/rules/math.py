"""Rules for the ``math`` dialect: each op reuses the neutral rule of its function."""

from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules.scalar import MATH
from zymase.ir import math

for cls, fname in {
    math.SqrtOp: "sqrt", math.RsqrtOp: "rsqrt", math.CbrtOp: "cbrt", math.ExpOp: "exp", math.Exp2Op: "exp2",
    math.ExpM1Op: "expm1", math.LogOp: "log", math.Log2Op: "log2", math.Log10Op: "log10",
    math.Log1pOp: "log1p", math.PowFOp: "pow", math.FPowIOp: "powi", math.SinOp: "sin",
    math.CosOp: "cos", math.TanOp: "tan", math.AsinOp: "asin", math.AcosOp: "acos",
    math.AtanOp: "atan", math.Atan2Op: "atan2", math.SinhOp: "sinh", math.CoshOp: "cosh",
    math.TanhOp: "tanh", math.AsinhOp: "asinh", math.AcoshOp: "acosh", math.AtanhOp: "atanh",
    math.ErfOp: "erf", math.AbsFOp: "fabs", math.CopySignOp: "copysign",
    math.FmaOp: "fma", math.FloorOp: "floor", math.CeilOp: "ceil", math.RoundOp: "round",
    math.RoundEvenOp: "roundeven", math.TruncOp: "trunc",
}.items():
    REGISTRY.register(cls, MATH[fname])
