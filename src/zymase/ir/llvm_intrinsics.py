"""``llvm.intr.*`` ops of MLIR's llvm dialect that xDSL 0.74 lacks.

xDSL defines ``llvm.intr.sqrt/exp/log/sin/cos/pow/fabs/fma/maxnum/minnum/...``; the
ones here complete the math intrinsics (``log10``, ``powi``, ``fmuladd``,
``maximum``, ``minimum``, ``round``, ``trunc``) in MLIR 19's textual form
(``llvm.intr.powi(%x, %n) : (f64, i32) -> f64``) and add the memory intrinsics
``llvm.intr.memcpy``/``memmove``/``memset``, which MLIR prints in the generic form
(``"llvm.intr.memcpy"(%d, %s, %n) <{isVolatile = false}> : (...) -> ()``).
zymase does not differentiate these ops directly: ``transforms/llvm_intrinsic_calls``
turns every ``llvm.intr.*`` math and memory op into the ``llvm.call_intrinsic`` the
LLVM IR reader would have made, whose rules and shadow-memory handling exist.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr
from xdsl.dialects.llvm import FastMathAttr
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)

__all__ = ["INTRINSIC_OPS"]


def _math(op_name: str) -> type[IRDLOperation]:
    class _Intrinsic(IRDLOperation):
        name = f"llvm.intr.{op_name}"
        args = var_operand_def()
        res = result_def()
        fastmathFlags = opt_prop_def(FastMathAttr)
        assembly_format = "`(` operands `)` attr-dict `:` functional-type(operands, results)"
        irdl_options = (ParsePropInAttrDict(),)

    _Intrinsic.__name__ = _Intrinsic.__qualname__ = op_name.capitalize() + "IntrOp"
    return irdl_op_definition(_Intrinsic)


def _memory(op_name: str) -> type[IRDLOperation]:
    class _Intrinsic(IRDLOperation):
        name = f"llvm.intr.{op_name}"
        dst = operand_def()
        src = operand_def()  # the byte value for memset
        len = operand_def()
        isVolatile = prop_def(IntegerAttr)

    _Intrinsic.__name__ = _Intrinsic.__qualname__ = op_name.capitalize() + "IntrOp"
    return irdl_op_definition(_Intrinsic)


INTRINSIC_OPS = [
    *(_math(n) for n in ("log10", "powi", "fmuladd", "maximum", "minimum", "round", "trunc")),
    *(_memory(n) for n in ("memcpy", "memmove", "memset")),
]
