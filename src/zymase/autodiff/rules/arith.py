"""Rules for the ``arith`` dialect (integer and index ops carry no derivative)."""

from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules import scalar
from zymase.autodiff.rules.common import SELECT
from zymase.ir import arith, arith_ext

for cls, rule in {
    arith.AddfOp: scalar.FADD,
    arith.SubfOp: scalar.FSUB,
    arith.MulfOp: scalar.FMUL,
    arith.DivfOp: scalar.FDIV,
    arith.NegfOp: scalar.FNEG,
    arith_ext.RemFOp: scalar.FREM,
    arith.ExtFOp: scalar.FCONV,
    arith.TruncFOp: scalar.FCONV,
    arith.MinnumfOp: scalar.MATH["fmin"],
    arith.MaxnumfOp: scalar.MATH["fmax"],
    arith.MinimumfOp: scalar.MATH["fmin"],
    arith.MaximumfOp: scalar.MATH["fmax"],
    arith.SelectOp: SELECT,
}.items():
    REGISTRY.register(cls, rule)
