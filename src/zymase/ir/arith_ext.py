"""``arith`` operations that xDSL 0.74 lacks, defined with IRDL.

MLIR's arith dialect has ``arith.remf`` and ``arith.index_castui``; xDSL 0.74 does
not, so MLIR text using them would not parse. They are registered together with
xDSL's own arith ops as one extended ``arith`` dialect (:data:`ARITH_EXT`), the
same way :mod:`zymase.ir.llvm_ext` extends ``llvm``; xDSL itself is never patched.
"""

from __future__ import annotations

from xdsl.dialects import arith as _xarith
from xdsl.dialects.builtin import IndexType, IntegerType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import base, irdl_op_definition, operand_def, result_def, traits_def, IRDLOperation
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class RemFOp(_xarith.FloatingPointLikeBinaryOperation):
    """``arith.remf``: floating-point remainder with the sign of the dividend (C fmod)."""

    name = "arith.remf"
    traits = traits_def(Pure())


@irdl_op_definition
class IndexCastUIOp(IRDLOperation):
    """``arith.index_castui``: like ``arith.index_cast`` but zero-extending."""

    name = "arith.index_castui"

    input = operand_def(base(IntegerType) | base(IndexType))
    result = result_def(base(IntegerType) | base(IndexType))

    traits = traits_def(Pure())

    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    def __init__(self, input_arg: SSAValue | Operation, target_type: Attribute):
        super().__init__(operands=[input_arg], result_types=[target_type])

    def verify_(self) -> None:
        if not isinstance(self.input.type, IndexType) ^ isinstance(self.result.type, IndexType):
            raise VerifyException(
                f"'arith.index_castui' op operand type '{self.input.type}' and result "
                f"type '{self.result.type}' are cast incompatible"
            )


EXTRA_OPS: list[type] = [RemFOp, IndexCastUIOp]

ARITH_EXT = Dialect(
    "arith",
    [*_xarith.Arith.operations, *EXTRA_OPS],
    [*_xarith.Arith.attributes],
)
