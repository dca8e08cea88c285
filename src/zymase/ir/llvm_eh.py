"""LLVM's exception-handling instructions as ops of the extended ``llvm`` dialect:
``llvm.invoke``, ``llvm.landingpad`` and ``llvm.resume`` (xDSL 0.74 has none of them).

They exist so that C++ compiled with exceptions (clang's default) round-trips through
zymase unchanged: the reader builds them, the writer prints them back, and
``transforms/exceptions`` lowers invokes to calls in the bodies zymase differentiates.
The function's personality is kept by the reader as the ``personality`` attribute
(:data:`PERSONALITY_ATTR`) of the ``llvm.func``.

The ops mirror MLIR's llvm dialect: an invoke is a call that is also a terminator with
a normal and an unwind destination (each with its own successor operands); a landing
pad's clauses are operands (an array-typed operand is a ``filter``, any other a
``catch``), ``cleanup`` is a unit property.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import llvm as _xllvm
from xdsl.dialects.builtin import SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    opt_result_def,
    prop_def,
    result_def,
    successor_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import IsTerminator

PERSONALITY_ATTR = "personality"
"""The ``llvm.func`` attribute (a symbol reference) naming the personality function."""


@irdl_op_definition
class InvokeOp(IRDLOperation):
    """``invoke``: a call that continues at ``normal_dest`` when the callee returns and
    at ``unwind_dest`` (a block starting with a landing pad) when it throws. Without a
    ``callee`` property the first of ``callee_operands`` is the function pointer."""

    name = "llvm.invoke"

    callee_operands = var_operand_def()
    normal_dest_operands = var_operand_def()
    unwind_dest_operands = var_operand_def()
    result = opt_result_def()

    callee = opt_prop_def(SymbolRefAttr)
    var_callee_type = opt_prop_def(_xllvm.LLVMFunctionType)
    CConv = prop_def(_xllvm.CallingConventionAttr)

    normal_dest = successor_def()
    unwind_dest = successor_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(IsTerminator())

    def __init__(
        self,
        callee: str | None,
        args: Sequence[SSAValue],
        result_type: Attribute | None,
        normal_dest: Block,
        normal_operands: Sequence[SSAValue],
        unwind_dest: Block,
        unwind_operands: Sequence[SSAValue],
        *,
        cconv: Attribute | None = None,
        var_callee_type: Attribute | None = None,
        attributes: dict[str, Attribute] | None = None,
    ):
        props: dict[str, Attribute] = {"CConv": cconv or _xllvm.CallingConventionAttr("ccc")}
        if callee is not None:
            props["callee"] = SymbolRefAttr(callee)
        if var_callee_type is not None:
            props["var_callee_type"] = var_callee_type
        super().__init__(
            operands=[list(args), list(normal_operands), list(unwind_operands)],
            result_types=[[result_type] if result_type is not None else []],
            successors=[normal_dest, unwind_dest],
            properties=props,
            attributes=attributes,
        )

    def call_args(self) -> tuple[SSAValue, ...]:
        """The arguments of the call (without the function pointer of an indirect one)."""
        operands = tuple(self.callee_operands)
        return operands if self.callee is not None else operands[1:]


@irdl_op_definition
class LandingPadOp(IRDLOperation):
    """``landingpad``: where an unwind edge lands; its result (``{ptr, i32}`` for C++)
    holds the exception and the selector. ``clauses`` are the caught type infos
    (``catch``) and arrays of them (``filter``)."""

    name = "llvm.landingpad"

    clauses = var_operand_def()
    res = result_def()
    cleanup = opt_prop_def(UnitAttr)

    def __init__(self, result_type: Attribute, clauses: Sequence[SSAValue], cleanup: bool):
        super().__init__(
            operands=[list(clauses)],
            result_types=[result_type],
            properties={"cleanup": UnitAttr()} if cleanup else {},
        )


@irdl_op_definition
class ResumeOp(IRDLOperation):
    """``resume``: continue unwinding with the value a landing pad produced."""

    name = "llvm.resume"

    value = operand_def(AnyAttr())
    traits = traits_def(IsTerminator())

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


EH_OPS: list[type] = [InvokeOp, LandingPadOp, ResumeOp]

