"""Rules for the ``llvm`` dialect. Calls to intrinsics are resolved by their neutral
name (``llvm.sin.f64`` -> ``sin``) in :mod:`zymase.autodiff.rules.libm`."""

from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules import scalar
from zymase.autodiff.rules.common import SELECT
from zymase.ir import llvm, llvm_ext

for cls, rule in {
    llvm.FAddOp: scalar.FADD,
    llvm.FSubOp: scalar.FSUB,
    llvm.FMulOp: scalar.FMUL,
    llvm.FDivOp: scalar.FDIV,
    llvm.FRemOp: scalar.FREM,
    llvm.FNegOp: scalar.FNEG,
    llvm.FPExtOp: scalar.FCONV,
    llvm.FPTruncOp: scalar.FCONV,
    llvm.SelectOp: SELECT,
    llvm_ext.FreezeOp: scalar.FREEZE,
}.items():
    REGISTRY.register(cls, rule)
REGISTRY.register_function("arithmetic.fence", scalar.FENCE)  # (by its intrinsic's neutral name)
REGISTRY.register_function("canonicalize", scalar.CANONICALIZE)
