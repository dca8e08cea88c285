"""LLVM dialect operations that xDSL 0.74 lacks, defined with IRDL.

Registered together with xDSL's own ``llvm`` ops as one extended ``llvm`` dialect
(see :data:`LLVM_EXT`), so that xDSL itself is never patched.

Two kinds of definitions live here:

* **New ops** that xDSL does not have at all: ``llvm.switch``, ``llvm.freeze``,
  ``llvm.mlir.poison``, the casts ``llvm.fptosi`` / ``llvm.fptoui`` /
  ``llvm.uitofp`` / ``llvm.addrspacecast``, ``llvm.extractelement``,
  ``llvm.atomicrmw``, ``llvm.cmpxchg``, ``llvm.fence`` and ``llvm.va_arg``; plus
  the type ``!llvm.packed_struct<...>`` (xDSL's struct type has no packed flag).
* **Exception handling** (``llvm.invoke``, ``llvm.landingpad``, ``llvm.resume``):
  defined in :mod:`zymase.ir.llvm_eh` and registered here.
* **Widened variants** of xDSL ops whose constraints are narrower than LLVM's:
  ``llvm.icmp`` on pointers, ``llvm.fcmp`` / ``llvm.select`` on vectors (and fcmp
  printing its fast-math flags), ``llvm.load`` with ``volatile``, ``llvm.store``
  printing its atomic ordering. Each is a *subclass* of the xDSL op, registered
  under the same name, so ``isinstance(op, xdsl.dialects.llvm.ICmpOp)`` keeps
  working for code that only knows xDSL's classes, and ops built with xDSL's
  constructors are still accepted everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import llvm as _xllvm
from xdsl.dialects.builtin import (
    I1,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IntegerAttr,
    IntegerType,
    SignlessIntegerConstraint,
    StringAttr,
    UnitAttr,
    VectorType,
    i1,
    i32,
    i64,
)
from xdsl.dialects.utils import FastMathAttrBase
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    VarConstraint,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    successor_def,
    traits_def,
    var_operand_def,
    var_successor_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoMemoryEffect, Pure
from xdsl.utils.exceptions import VerifyException

from zymase.ir.fast_ops import init_op, int_attr
from zymase.ir.llvm_eh import EH_OPS
from zymase.ir.llvm_intrinsics import INTRINSIC_OPS

_UNIT = UnitAttr()

LLVMPointerType = _xllvm.LLVMPointerType
FastMathAttr = _xllvm.FastMathAttr

ATOMIC_ORDERINGS: dict[int, str] = dict(_xllvm.ATOMIC_ORDERING_KEYWORDS)
"""MLIR's AtomicOrdering enum values (as used by xDSL's LoadOp) -> LLVM keyword."""
ATOMIC_ORDERING_BY_NAME: dict[str, int] = {v: k for k, v in ATOMIC_ORDERINGS.items()}

ATOMIC_BIN_OPS: tuple[str, ...] = (
    "xchg", "add", "sub", "and", "nand", "or", "xor", "max", "min", "umax", "umin",
    "fadd", "fsub", "fmax", "fmin", "uinc_wrap", "udec_wrap", "usub_cond", "usub_sat",
    "fmaximum", "fminimum",
)
"""LLVM's atomicrmw operations (kept as their keyword in a StringAttr)."""

_INT_OR_PTR = SignlessIntegerConstraint | base(LLVMPointerType)
_ANY_FLOAT = _xllvm.AnyFloatConstr


# --------------------------------------------------------------------------- types


@irdl_attr_definition
class LLVMPackedStructType(ParametrizedAttribute, TypeAttribute):
    """A packed LLVM struct ``<{ ... }>``: fields laid out without padding.

    xDSL's ``!llvm.struct`` has no packed flag, so packed structs get their own
    type, printed ``!llvm.packed_struct<(i8, i32)>`` or with a name
    ``!llvm.packed_struct<"struct.S", (i8, i32)>``. Layout-aware code (type
    analysis) must not treat it like an ordinary struct.
    """

    name = "llvm.packed_struct"

    struct_name: StringAttr
    types: ArrayAttr[Attribute]

    @staticmethod
    def from_type_list(types: Sequence[Attribute], name: str = "") -> LLVMPackedStructType:
        return LLVMPackedStructType(StringAttr(name), ArrayAttr(types))

    def print_parameters(self, printer: Printer) -> None:
        _xllvm.LLVMStructType.print_parameters(self, printer)  # same text layout

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[StringAttr, ArrayAttr]:
        return _xllvm.LLVMStructType.parse_parameters.__func__(cls, parser)


# ------------------------------------------------------------- widened xDSL ops


@irdl_op_definition
class ICmpOp(_xllvm.ICmpOp):
    """``llvm.icmp`` that also accepts pointers and vectors of pointers (as LLVM does)."""

    T: ClassVar = VarConstraint("T", _INT_OR_PTR | VectorType.constr(_INT_OR_PTR))

    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(I1 | VectorType[I1])
    predicate = prop_def(IntegerAttr[IntegerType])

    traits = traits_def(NoMemoryEffect())

    def verify_(self) -> None:
        if isinstance(self.lhs.type, VectorType) != isinstance(self.res.type, VectorType):
            raise VerifyException("llvm.icmp: result must be a vector iff the operands are")


@irdl_op_definition
class FCmpOp(_xllvm.FCmpOp):
    """``llvm.fcmp`` on scalars or vectors; prints its fast-math flags (xDSL's drops them)."""

    T: ClassVar = VarConstraint("T", _ANY_FLOAT | VectorType.constr(_ANY_FLOAT))

    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(I1 | VectorType[I1])
    predicate = prop_def(IntegerAttr[IntegerType])
    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))

    traits = traits_def(Pure())

    def __init__(
        self,
        lhs: Operation | SSAValue,
        rhs: Operation | SSAValue,
        predicate: str | IntegerAttr[IntegerType],
        attributes: dict[str, Attribute] | None = None,
        fast_math: FastMathAttr | None = None,
    ):
        if isinstance(predicate, str):
            predicate = IntegerAttr(_xllvm.FCmpPredicateFlag(predicate).to_int(), i64)
        operand_type = SSAValue.get(lhs).type
        result_type = (
            VectorType(i1, operand_type.get_shape())
            if isinstance(operand_type, VectorType)
            else i1
        )
        IRDLOperation.__init__(
            self,
            operands=[lhs, rhs],
            result_types=[result_type],
            attributes=attributes or {},
            properties={
                "predicate": predicate,
                "fastmathFlags": fast_math or FastMathAttr(None),
            },
        )

    @classmethod
    def parse(cls, parser: Parser) -> FCmpOp:
        predicate = parser.parse_str_literal()
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        type_ = parser.parse_type()
        operands = parser.resolve_operands([lhs, rhs], [type_, type_], parser.pos)
        fmf = attributes.pop("fastmathFlags", None)
        if fmf is not None and not isinstance(fmf, FastMathAttr):
            parser.raise_error("fastmathFlags must be a #llvm.fastmath attribute")
        return cls(operands[0], operands[1], predicate, attributes, fmf)

    def print(self, printer: Printer) -> None:
        flag = _xllvm.FCmpPredicateFlag.from_int(self.predicate.value.data)
        printer.print_string(f' "{flag}" ')
        printer.print_ssa_value(self.lhs)
        printer.print_string(", ")
        printer.print_ssa_value(self.rhs)
        attrs = dict(self.attributes)
        if self.fastmathFlags.data:
            attrs["fastmathFlags"] = self.fastmathFlags
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.lhs.type)

    def verify_(self) -> None:
        if isinstance(self.lhs.type, VectorType) != isinstance(self.res.type, VectorType):
            raise VerifyException("llvm.fcmp: result must be a vector iff the operands are")


@irdl_op_definition
class SelectOp(_xllvm.SelectOp):
    """``llvm.select`` whose condition may also be a vector of i1 (per-lane select)."""

    T: ClassVar = VarConstraint("T", AnyAttr())

    cond = operand_def(I1 | VectorType[I1])
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)

    fastmathFlags = prop_def(FastMathAttr, default_value=FastMathAttr(None))

    traits = traits_def(Pure())

    irdl_options = (ParsePropInAttrDict(),)

    # Text form: xDSL's assembly format, which spells out both types and so
    # round-trips the vector form unchanged.
    assembly_format = None

    def print(self, printer: Printer) -> None:
        _xllvm.SelectOp.print(self, printer)

    @classmethod
    def parse(cls, parser: Parser) -> SelectOp:
        return _xllvm.SelectOp.parse.__func__(cls, parser)

    def verify_(self) -> None:
        pass


@irdl_op_definition
class LoadOp(_xllvm.LoadOp):
    """``llvm.load`` with a ``volatile_`` property (xDSL's has none).

    Text: ``llvm.load volatile %p atomic seq_cst {alignment = 8 : i64} : !llvm.ptr -> f64``.
    """

    ptr = operand_def(LLVMPointerType)
    alignment = opt_prop_def(IntegerAttr[IntegerType])
    ordering = prop_def(IntegerAttr[IntegerType], default_value=IntegerAttr(0, i64))
    volatile_ = opt_prop_def(UnitAttr)
    dereferenced_value = result_def()

    def __init__(
        self,
        ptr: SSAValue | Operation,
        result_type: Attribute,
        alignment: int | None = None,
        ordering: int = 0,
        volatile: bool = False,
    ):
        props: dict[str, Attribute] = {"ordering": int_attr(ordering)}
        if alignment is not None:
            props["alignment"] = int_attr(alignment)
        if volatile:
            props["volatile_"] = _UNIT
        init_op(self, [ptr], [result_type], props)  # (IRDL's generic matching: fast_ops)

    def print(self, printer: Printer) -> None:
        if self.volatile_ is not None:
            printer.print_string(" volatile")
        super().print(printer)

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        volatile = parser.parse_optional_keyword("volatile") is not None
        op = super().parse(parser)
        if volatile:
            op.properties["volatile_"] = UnitAttr()
        return op

    def verify_(self) -> None:
        pass


class StoreOp(_xllvm.StoreOp):
    """``llvm.store`` whose text form keeps the atomic ordering (xDSL's printer drops it).

    Text: ``llvm.store volatile %v, %p atomic release {alignment = 8 : i64} : f64, !llvm.ptr``.
    Same IRDL definition as xDSL's StoreOp; only printing/parsing differ.
    """

    name = "llvm.store"

    def __init__(
        self,
        value: SSAValue | Operation,
        ptr: SSAValue | Operation,
        alignment: int | None = None,
        ordering: int = 0,
        volatile: bool = False,
        nontemporal: bool = False,
    ):
        # xDSL's constructor, without IRDL's generic matching (fast_ops)
        props: dict[str, Attribute] = {"ordering": int_attr(ordering)}
        if alignment is not None:
            props["alignment"] = int_attr(alignment)
        if volatile:
            props["volatile_"] = _UNIT
        if nontemporal:
            props["nontemporal"] = _UNIT
        init_op(self, [value, ptr], [], props)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.volatile_ is not None:
            printer.print_string("volatile ")
        printer.print_ssa_value(self.value)
        printer.print_string(", ")
        printer.print_ssa_value(self.ptr)
        if self.ordering is not None and self.ordering.value.data != 0:
            printer.print_string(f" atomic {ATOMIC_ORDERINGS[self.ordering.value.data]}")
        attrs = dict(self.attributes)
        if self.alignment is not None:
            attrs["alignment"] = self.alignment
        if self.nontemporal is not None:
            attrs["nontemporal"] = self.nontemporal
        printer.print_op_attributes(attrs)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)
        printer.print_string(", ")
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        volatile = parser.parse_optional_keyword("volatile") is not None
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        ptr = parser.parse_unresolved_operand()
        ordering = _parse_optional_atomic(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        parser.parse_punctuation(",")
        ptr_type = parser.parse_type()
        alignment = attrs.pop("alignment", None)
        op = cls(
            parser.resolve_operand(value, value_type),
            parser.resolve_operand(ptr, ptr_type),
            alignment=alignment.value.data if isinstance(alignment, IntegerAttr) else None,
            ordering=ordering,
            volatile=volatile,
            nontemporal=attrs.pop("nontemporal", None) is not None,
        )
        op.attributes |= attrs
        return op


def _parse_optional_atomic(parser: Parser) -> int:
    """Parse ``atomic <ordering>`` if present; 0 (not atomic) otherwise."""
    if parser.parse_optional_keyword("atomic") is None:
        return 0
    return _parse_ordering(parser)


def _parse_ordering(parser: Parser) -> int:
    keyword = parser.parse_identifier()
    if keyword not in ATOMIC_ORDERING_BY_NAME:
        parser.raise_error(f"unknown atomic ordering '{keyword}'")
    return ATOMIC_ORDERING_BY_NAME[keyword]


# ------------------------------------------------------------------- new ops


def _parse_dest(parser: Parser) -> tuple[Block, list[SSAValue]]:
    """Parse ``^bb`` or ``^bb(%a, %b : t1, t2)``."""
    block = parser.parse_successor()
    if parser.parse_optional_punctuation("(") is None:
        return block, []
    names: list[UnresolvedOperand] = parser.parse_comma_separated_list(
        Parser.Delimiter.NONE, parser.parse_unresolved_operand
    )
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
    parser.parse_punctuation(")")
    return block, parser.resolve_operands(names, types, parser.pos)


def _print_dest(printer: Printer, block: Block, args: Sequence[SSAValue]) -> None:
    printer.print_block_name(block)
    if args:
        printer.print_string("(")
        printer.print_list(args, printer.print_ssa_value)
        printer.print_string(" : ")
        printer.print_list([a.type for a in args], printer.print_attribute)
        printer.print_string(")")


@irdl_op_definition
class SwitchOp(IRDLOperation):
    """``llvm.switch``: multi-way branch on an integer (mirrors ``cf.switch``).

    Text: ``llvm.switch %v : i32, ^bb1 [1: ^bb2, 2: ^bb3(%x : f64)]``. Case values
    are a ``DenseIntElementsAttr`` of type ``vector<N x iK>``; the operands of case
    ``i`` are ``case_operands[sum(segments[:i]) : sum(segments[:i+1])]``.
    """

    name = "llvm.switch"

    value = operand_def(SignlessIntegerConstraint)
    default_operands = var_operand_def()
    case_operands = var_operand_def()

    case_values = opt_prop_def(DenseIntOrFPElementsAttr)
    case_operand_segments = prop_def(DenseArrayBase.constr(i32))

    default_destination = successor_def()
    case_destinations = var_successor_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(IsTerminator(), Pure())

    def __init__(
        self,
        value: SSAValue | Operation,
        default_destination: Block,
        default_operands: Sequence[SSAValue | Operation] = (),
        case_values: Sequence[int] = (),
        case_destinations: Sequence[Block] = (),
        case_operands: Sequence[Sequence[SSAValue | Operation]] | None = None,
        attributes: dict[str, Attribute] | None = None,
    ):
        if case_operands is None:
            case_operands = [()] * len(case_destinations)
        value_type = SSAValue.get(value).type
        props: dict[str, Attribute] = {
            "case_operand_segments": DenseArrayBase.from_list(
                i32, [len(ops) for ops in case_operands]
            )
        }
        if case_destinations:
            props["case_values"] = DenseIntOrFPElementsAttr.from_list(
                VectorType(value_type, (len(case_values),)), list(case_values)
            )
        super().__init__(
            operands=[value, list(default_operands), [o for ops in case_operands for o in ops]],
            successors=[default_destination, list(case_destinations)],
            properties=props,
            attributes=attributes,
        )

    def case_value_list(self) -> list[int]:
        """The case values as Python ints (empty for a default-only switch)."""
        if self.case_values is None:
            return []
        return [int(v) for v in self.case_values.get_values()]

    def case_operand_lists(self) -> list[tuple[SSAValue, ...]]:
        """The successor operands of each case, in case order."""
        result: list[tuple[SSAValue, ...]] = []
        start = 0
        operands = tuple(self.case_operands)
        for size in self.case_operand_segments.get_values():
            result.append(operands[start : start + size])
            start += size
        return result

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.value)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)
        printer.print_string(", ")
        _print_dest(printer, self.default_destination, tuple(self.default_operands))
        printer.print_string(" [")
        cases = list(zip(self.case_value_list(), self.case_destinations, self.case_operand_lists()))
        for i, (val, dest, ops) in enumerate(cases):
            if i:
                printer.print_string(", ")
            printer.print_string(f"{val}: ")
            _print_dest(printer, dest, ops)
        printer.print_string("]")
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> SwitchOp:
        name = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        value = parser.resolve_operand(name, value_type)
        parser.parse_punctuation(",")
        default, default_ops = _parse_dest(parser)
        parser.parse_punctuation("[")
        values: list[int] = []
        dests: list[Block] = []
        operands: list[list[SSAValue]] = []
        if parser.parse_optional_punctuation("]") is None:
            while True:
                values.append(parser.parse_integer(allow_boolean=True))
                parser.parse_punctuation(":")
                dest, ops = _parse_dest(parser)
                dests.append(dest)
                operands.append(ops)
                if parser.parse_optional_punctuation(",") is None:
                    break
            parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        return cls(value, default, default_ops, values, dests, operands, attrs)

    def verify_(self) -> None:
        values = self.case_value_list()
        if len(values) != len(self.case_destinations):
            raise VerifyException("llvm.switch: number of case values and case destinations differ")
        if self.case_values is not None and self.case_values.get_element_type() != self.value.type:
            raise VerifyException("llvm.switch: case value type must match the switched value")
        if sum(self.case_operand_segments.get_values()) != len(self.case_operands):
            raise VerifyException("llvm.switch: case operand segments do not add up")
        if len(self.case_operand_segments) != len(self.case_destinations):
            raise VerifyException("llvm.switch: one operand segment per case is required")


@irdl_op_definition
class FreezeOp(IRDLOperation):
    """``llvm.freeze``: stops undef/poison propagation (picks an arbitrary fixed value)."""

    name = "llvm.freeze"

    T: ClassVar = VarConstraint("T", AnyAttr())
    val = operand_def(T)
    res = result_def(T)

    assembly_format = "$val attr-dict `:` type($val)"
    traits = traits_def(Pure())

    def __init__(self, val: SSAValue | Operation):
        super().__init__(operands=[val], result_types=[SSAValue.get(val).type])


@irdl_op_definition
class PoisonOp(IRDLOperation):
    """``llvm.mlir.poison``: the poison value of a type."""

    name = "llvm.mlir.poison"

    res = result_def()
    assembly_format = "attr-dict `:` type($res)"
    traits = traits_def(Pure())

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])


class _CastOp(IRDLOperation):
    """Shared shape of a one-operand cast: ``%r = llvm.X %a : T1 to T2``."""

    arg = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    assembly_format = "$arg attr-dict `:` type($arg) `to` type($res)"

    def __init__(self, arg: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[arg], result_types=[result_type])


@irdl_op_definition
class FPToSIOp(_CastOp):
    """``llvm.fptosi``: float to signed integer (poison when out of range)."""

    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(_CastOp):
    """``llvm.fptoui``: float to unsigned integer (poison when out of range)."""

    name = "llvm.fptoui"


@irdl_op_definition
class AddrSpaceCastOp(_CastOp):
    """``llvm.addrspacecast``: pointer to a pointer in another address space."""

    name = "llvm.addrspacecast"


@irdl_op_definition
class UIToFPOp(IRDLOperation):
    """``llvm.uitofp`` with the optional ``nneg`` flag (operand known non-negative)."""

    name = "llvm.uitofp"

    arg = operand_def()
    res = result_def()
    non_neg = opt_prop_def(UnitAttr, prop_name="nonNeg")
    traits = traits_def(Pure())
    assembly_format = "(`nneg` $nonNeg^)? $arg attr-dict `:` type($arg) `to` type($res)"

    def __init__(self, arg: SSAValue | Operation, result_type: Attribute, non_neg: bool = False):
        super().__init__(
            operands=[arg],
            result_types=[result_type],
            properties={"nonNeg": UnitAttr()} if non_neg else {},
        )


@irdl_op_definition
class ExtractElementOp(IRDLOperation):
    """``llvm.extractelement``: one lane of a vector, at a dynamic index."""

    name = "llvm.extractelement"

    ELEMENT: ClassVar = VarConstraint("ELEMENT", AnyAttr())
    vector = operand_def(VectorType.constr(ELEMENT))
    position = operand_def(SignlessIntegerConstraint)
    res = result_def(ELEMENT)

    assembly_format = "$vector `[` $position `:` type($position) `]` attr-dict `:` type($vector)"
    traits = traits_def(Pure())

    def __init__(self, vector: SSAValue | Operation, position: SSAValue | Operation):
        vector_type = SSAValue.get(vector).type
        assert isinstance(vector_type, VectorType)
        super().__init__(operands=[vector, position], result_types=[vector_type.element_type])


def _print_atomic_tail(printer: Printer, op: IRDLOperation, reserved: Sequence[str]) -> None:
    """Print syncscope/alignment and discardable attributes as one attribute dict."""
    attrs = dict(op.attributes)
    for key in ("syncscope", "alignment"):
        if (value := op.properties.get(key)) is not None:
            attrs[key] = value
    printer.print_op_attributes(attrs, reserved_attr_names=reserved)


def _take_atomic_props(attrs: dict[str, Attribute]) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    for key in ("syncscope", "alignment"):
        if key in attrs:
            props[key] = attrs.pop(key)
    return props


@irdl_op_definition
class AtomicRMWOp(IRDLOperation):
    """``llvm.atomicrmw``: atomic read-modify-write; the result is the old value.

    Text: ``llvm.atomicrmw volatile fadd %p, %v seq_cst {alignment = 8 : i64} : !llvm.ptr, f64``.
    ``bin_op`` is LLVM's keyword (``add``, ``fadd``, ``xchg``, ...).
    """

    name = "llvm.atomicrmw"

    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(LLVMPointerType)
    val = operand_def(T)
    res = result_def(T)

    bin_op = prop_def(StringAttr)
    ordering = prop_def(IntegerAttr[IntegerType])
    syncscope = opt_prop_def(StringAttr)
    alignment = opt_prop_def(IntegerAttr[IntegerType])
    volatile_ = opt_prop_def(UnitAttr)

    def __init__(
        self,
        bin_op: str,
        ptr: SSAValue | Operation,
        val: SSAValue | Operation,
        ordering: int,
        alignment: int | None = None,
        syncscope: str | None = None,
        volatile: bool = False,
    ):
        props: dict[str, Attribute] = {
            "bin_op": StringAttr(bin_op),
            "ordering": IntegerAttr(ordering, i64),
        }
        if alignment is not None:
            props["alignment"] = IntegerAttr(alignment, i64)
        if syncscope is not None:
            props["syncscope"] = StringAttr(syncscope)
        if volatile:
            props["volatile_"] = UnitAttr()
        super().__init__(operands=[ptr, val], result_types=[SSAValue.get(val).type], properties=props)

    def print(self, printer: Printer) -> None:
        if self.volatile_ is not None:
            printer.print_string(" volatile")
        printer.print_string(f" {self.bin_op.data} ")
        printer.print_ssa_value(self.ptr)
        printer.print_string(", ")
        printer.print_ssa_value(self.val)
        printer.print_string(f" {ATOMIC_ORDERINGS[self.ordering.value.data]}")
        _print_atomic_tail(printer, self, ())
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(", ")
        printer.print_attribute(self.val.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        volatile = parser.parse_optional_keyword("volatile") is not None
        bin_op = parser.parse_identifier()
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        val = parser.parse_unresolved_operand()
        ordering = _parse_ordering(parser)
        attrs = parser.parse_optional_attr_dict()
        props = _take_atomic_props(attrs)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        val_type = parser.parse_type()
        props |= {"bin_op": StringAttr(bin_op), "ordering": IntegerAttr(ordering, i64)}
        if volatile:
            props["volatile_"] = UnitAttr()
        return cls.create(
            operands=[parser.resolve_operand(ptr, ptr_type), parser.resolve_operand(val, val_type)],
            result_types=[val_type],
            properties=props,
            attributes=attrs,
        )

    def verify_(self) -> None:
        if self.bin_op.data not in ATOMIC_BIN_OPS:
            raise VerifyException(f"llvm.atomicrmw: unknown operation '{self.bin_op.data}'")


@irdl_op_definition
class AtomicCmpXchgOp(IRDLOperation):
    """``llvm.cmpxchg``: atomic compare-and-exchange; result ``!llvm.struct<(T, i1)>``.

    Text: ``llvm.cmpxchg weak %p, %cmp, %new acq_rel monotonic {alignment = 4 : i64} : !llvm.ptr, i32``.
    """

    name = "llvm.cmpxchg"

    T: ClassVar = VarConstraint("T", AnyAttr())
    ptr = operand_def(LLVMPointerType)
    cmp = operand_def(T)
    val = operand_def(T)
    res = result_def(_xllvm.LLVMStructType)

    success_ordering = prop_def(IntegerAttr[IntegerType])
    failure_ordering = prop_def(IntegerAttr[IntegerType])
    syncscope = opt_prop_def(StringAttr)
    alignment = opt_prop_def(IntegerAttr[IntegerType])
    weak = opt_prop_def(UnitAttr)
    volatile_ = opt_prop_def(UnitAttr)

    def __init__(
        self,
        ptr: SSAValue | Operation,
        cmp: SSAValue | Operation,
        val: SSAValue | Operation,
        success_ordering: int,
        failure_ordering: int,
        alignment: int | None = None,
        syncscope: str | None = None,
        weak: bool = False,
        volatile: bool = False,
    ):
        value_type = SSAValue.get(val).type
        props: dict[str, Attribute] = {
            "success_ordering": IntegerAttr(success_ordering, i64),
            "failure_ordering": IntegerAttr(failure_ordering, i64),
        }
        if alignment is not None:
            props["alignment"] = IntegerAttr(alignment, i64)
        if syncscope is not None:
            props["syncscope"] = StringAttr(syncscope)
        if weak:
            props["weak"] = UnitAttr()
        if volatile:
            props["volatile_"] = UnitAttr()
        super().__init__(
            operands=[ptr, cmp, val],
            result_types=[_xllvm.LLVMStructType.from_type_list([value_type, i1])],
            properties=props,
        )

    def print(self, printer: Printer) -> None:
        if self.weak is not None:
            printer.print_string(" weak")
        if self.volatile_ is not None:
            printer.print_string(" volatile")
        printer.print_string(" ")
        printer.print_list([self.ptr, self.cmp, self.val], printer.print_ssa_value)
        printer.print_string(
            f" {ATOMIC_ORDERINGS[self.success_ordering.value.data]}"
            f" {ATOMIC_ORDERINGS[self.failure_ordering.value.data]}"
        )
        _print_atomic_tail(printer, self, ())
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(", ")
        printer.print_attribute(self.val.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicCmpXchgOp:
        weak = parser.parse_optional_keyword("weak") is not None
        volatile = parser.parse_optional_keyword("volatile") is not None
        names = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)
        if len(names) != 3:
            parser.raise_error("llvm.cmpxchg expects three operands")
        success = _parse_ordering(parser)
        failure = _parse_ordering(parser)
        attrs = parser.parse_optional_attr_dict()
        props = _take_atomic_props(attrs)
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        val_type = parser.parse_type()
        ptr, cmp, val = parser.resolve_operands(names, [ptr_type, val_type, val_type], parser.pos)
        op = cls(ptr, cmp, val, success, failure, weak=weak, volatile=volatile)
        op.properties |= props
        op.attributes |= attrs
        return op


@irdl_op_definition
class FenceOp(IRDLOperation):
    """``llvm.fence``: a memory ordering barrier. Text: ``llvm.fence seq_cst {syncscope = "agent"}``."""

    name = "llvm.fence"

    ordering = prop_def(IntegerAttr[IntegerType])
    syncscope = opt_prop_def(StringAttr)

    def __init__(self, ordering: int, syncscope: str | None = None):
        props: dict[str, Attribute] = {"ordering": IntegerAttr(ordering, i64)}
        if syncscope is not None:
            props["syncscope"] = StringAttr(syncscope)
        super().__init__(properties=props)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {ATOMIC_ORDERINGS[self.ordering.value.data]}")
        _print_atomic_tail(printer, self, ())

    @classmethod
    def parse(cls, parser: Parser) -> FenceOp:
        ordering = _parse_ordering(parser)
        attrs = parser.parse_optional_attr_dict()
        props = _take_atomic_props(attrs)
        props["ordering"] = IntegerAttr(ordering, i64)
        return cls.create(properties=props, attributes=attrs)


@irdl_op_definition
class VaArgOp(IRDLOperation):
    """``llvm.va_arg``: read the next variadic argument of the given type from a va_list."""

    name = "llvm.va_arg"

    arg = operand_def(LLVMPointerType)
    res = result_def()
    assembly_format = "$arg attr-dict `:` functional-type($arg, $res)"

    def __init__(self, va_list: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[va_list], result_types=[result_type])


EXTRA_OPS: list[type] = [
    SwitchOp,
    FreezeOp,
    PoisonOp,
    FPToSIOp,
    FPToUIOp,
    UIToFPOp,
    AddrSpaceCastOp,
    ExtractElementOp,
    AtomicRMWOp,
    AtomicCmpXchgOp,
    FenceOp,
    VaArgOp,
]
"""Ops this module adds to the ``llvm`` dialect."""

OVERRIDDEN_OPS: list[type] = [ICmpOp, FCmpOp, SelectOp, LoadOp, StoreOp]
"""Subclasses replacing xDSL's op of the same name in the extended dialect."""

EXTRA_ATTRS: list[type] = [LLVMPackedStructType]

_overridden_names = {op.name for op in OVERRIDDEN_OPS}

LLVM_EXT = Dialect(
    "llvm",
    [
        *(op for op in _xllvm.LLVM.operations if op.name not in _overridden_names),
        *OVERRIDDEN_OPS,
        *EXTRA_OPS,
        *EH_OPS,
        *INTRINSIC_OPS,  # llvm_intrinsics: the math and memory intrinsics xDSL lacks
    ],
    [*_xllvm.LLVM.attributes, *EXTRA_ATTRS],
)


NSW, NUW = 1, 2


def overflow_bits(op: Operation) -> int:
    """The no-wrap flags of an integer op as bits (``NSW | NUW``): the reader keeps
    them as an i32 property, xDSL's own ops as an ``#llvm.overflow`` attribute."""
    attr = op.properties.get("overflowFlags")
    if attr is None:
        attr = op.attributes.get("overflowFlags")
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    if isinstance(attr, _xllvm.OverflowAttr):
        return attr.to_int()
    return 0
