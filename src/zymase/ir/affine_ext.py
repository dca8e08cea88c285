"""The ``affine`` dialect as MLIR prints it, where xDSL 0.74 lacks the syntax.

xDSL's affine dialect parses ``affine.for``/``load``/``store``/``apply``/``min``
and ``yield``, but has no ``affine.max``, no textual form for ``affine.if`` and
``affine.parallel``, and no ``symbol(%n)`` inside subscripts. This module adds
them as subclasses in one extended dialect (:data:`AFFINE_EXT`), as
:mod:`zymase.ir.memref_ext` does for ``memref``; xDSL is never patched (the
expression parser and printer of SSA subscripts are xDSL 0.74's private helpers,
``AffineParser._parse_affine_expr`` and ``affine._print_affine_expr_of_ssa_ids``). zymase
does not differentiate affine ops itself: ``transforms/lower_affine`` turns them
into scf/arith/memref before AD.

The load/store/if/parallel classes are plain Python subclasses of xDSL's (their
operands, properties and regions are xDSL's; only the textual form is new).

Every SSA value an expression names is kept as a *symbol* of the op's map (the
dims/symbols distinction only matters to affine analyses, which zymase does not
run): the maps read ``()[s0, s1, ...] -> (...)`` over the op's operands in order.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import affine as _xaffine
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AffineSetAttr,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    TensorType,
    i32,
    IndexType,
    IntegerAttr,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Attribute, Dialect, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.parser.affine_parser import AffineParser
from xdsl.printer import Printer
from xdsl.utils.mlir_lexer import MLIRTokenKind
from xdsl.utils.exceptions import VerifyException

__all__ = ["AFFINE_EXT", "IfOp", "LoadOp", "MaxOp", "ParallelOp", "StoreOp"]


# ----------------------------------------------------------------------------- expressions of SSA values


def _parse_ssa_exprs(parser: Parser, delimiter) -> tuple[AffineMap, list[SSAValue]]:
    """``[%i + 1, symbol(%n) * 2]`` (or in parentheses): a map over the SSA values
    it names, each one a symbol, and those values in order."""
    affine = AffineParser(parser._parser_state)
    names: dict[str, int] = {}
    spans: list = []

    def symbol_for(token) -> AffineExpr:
        if token.span.text not in names:
            names[token.span.text] = len(names)
            spans.append(token.span)
        return AffineExpr.symbol(names[token.span.text])

    def bare_id() -> AffineExpr | None:
        if (token := affine._parse_optional_token(MLIRTokenKind.PERCENT_IDENT)) is not None:
            return symbol_for(token)
        current = affine._current_token
        if current.kind == MLIRTokenKind.BARE_IDENT and current.text in ("symbol", "dim"):
            affine._consume_token()
            affine._parse_token(MLIRTokenKind.L_PAREN, "Expected '(' after symbol")
            token = affine._parse_token(MLIRTokenKind.PERCENT_IDENT, "Expected an SSA value")
            affine._parse_token(MLIRTokenKind.R_PAREN, "Expected ')'")
            return symbol_for(token)
        return None

    exprs = affine.parse_comma_separated_list(delimiter, lambda: affine._parse_affine_expr(bare_id))
    operands = [parser.resolve_operand(UnresolvedOperand(span, 0), IndexType()) for span in spans]
    return AffineMap(0, len(names), tuple(exprs)), operands


def _print_ssa_exprs(printer: Printer, exprs: Sequence[AffineExpr], operands: Sequence[SSAValue],
                     brackets: str = "[]") -> None:
    printer.print_string(brackets[0])
    for k, e in enumerate(exprs):
        if k:
            printer.print_string(", ")
        _xaffine._print_affine_expr_of_ssa_ids(printer, e, list(operands))
    printer.print_string(brackets[1])


def _parse_access(parser: Parser):
    memref = parser.parse_unresolved_operand()
    amap, indices = _parse_ssa_exprs(parser, Parser.Delimiter.SQUARE)
    parser.parse_punctuation(":")
    mtype = parser.parse_type()
    if not isinstance(mtype, MemRefType):
        parser.raise_error("expected a memref type")
    return parser.resolve_operand(memref, mtype), amap, indices, mtype


def _ensure_yield(region: Region) -> None:
    """The terminator MLIR leaves out when a region yields nothing."""
    for block in region.blocks:
        if block.last_op is None or not isinstance(block.last_op, _xaffine.YieldOp):
            block.add_op(_xaffine.YieldOp.get())


# ----------------------------------------------------------------------------- load / store


class LoadOp(_xaffine.LoadOp):
    """``affine.load %m[%i + symbol(%n)] : memref<...>``."""

    name = "affine.load"

    @classmethod
    def parse(cls, parser: Parser) -> LoadOp:
        memref, amap, indices, mtype = _parse_access(parser)
        return cls(memref, indices, AffineMapAttr(amap), mtype.get_element_type())


class StoreOp(_xaffine.StoreOp):
    """``affine.store %v, %m[%i + symbol(%n)] : memref<...>``."""

    name = "affine.store"

    @classmethod
    def parse(cls, parser: Parser) -> StoreOp:
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        memref, amap, indices, mtype = _parse_access(parser)
        return cls(parser.resolve_operand(value, mtype.get_element_type()), memref, indices, AffineMapAttr(amap))


# ----------------------------------------------------------------------------- max


@irdl_op_definition
class MaxOp(IRDLOperation):
    """``affine.max #map(%dims)[%syms]``: the largest of the map's results."""

    name = "affine.max"
    arguments = var_operand_def(IndexType())
    result = result_def(IndexType())
    map = prop_def(AffineMapAttr)

    def __init__(self, operands: Sequence[SSAValue], amap: AffineMapAttr):
        super().__init__(operands=[operands], properties={"map": amap}, result_types=[IndexType()])

    def verify_(self) -> None:
        m = self.map.data
        if len(self.operands) != m.num_dims + m.num_symbols:
            raise VerifyException(f"affine.max expects {m.num_dims + m.num_symbols} operands, got {len(self.operands)}")

    @classmethod
    def parse(cls, parser: Parser) -> MaxOp:
        pos = parser.pos
        m = parser.parse_attribute()
        if not isinstance(m, AffineMapAttr):
            parser.raise_error("expected an affine map", at_position=pos)
        dims = parser.parse_optional_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_operand(IndexType())) or []
        syms = parser.parse_optional_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType())) or []
        return cls([*dims, *syms], m)

    def print(self, printer: Printer) -> None:
        m = self.map.data
        printer.print_string(" ")
        printer.print_attribute(self.map)
        operands = list(self.arguments)
        printer.print_string("(")
        printer.print_list(operands[: m.num_dims], printer.print_ssa_value)
        printer.print_string(")")
        if m.num_symbols:
            printer.print_string("[")
            printer.print_list(operands[m.num_dims:], printer.print_ssa_value)
            printer.print_string("]")


# ----------------------------------------------------------------------------- if


def _parse_result_types(parser: Parser) -> list[Attribute]:
    if parser.parse_optional_punctuation("->") is None:
        return []
    if parser.parse_optional_punctuation("(") is not None:
        types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
        parser.parse_punctuation(")")
        return list(types)
    return [parser.parse_type()]


class IfOp(_xaffine.IfOp):
    """``affine.if #set(%dims)[%syms] -> (types) { ... } else { ... }``."""

    name = "affine.if"

    @classmethod
    def parse(cls, parser: Parser) -> IfOp:
        pos = parser.pos
        cond = parser.parse_attribute()
        if not isinstance(cond, AffineSetAttr):
            parser.raise_error("expected an affine set (#set or affine_set<...>)", at_position=pos)
        dims = parser.parse_optional_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parser.parse_operand(IndexType())) or []
        syms = parser.parse_optional_comma_separated_list(
            Parser.Delimiter.SQUARE, lambda: parser.parse_operand(IndexType())) or []
        types = _parse_result_types(parser)
        then = parser.parse_region()
        other = parser.parse_region() if parser.parse_optional_keyword("else") is not None else Region()
        attrs = parser.parse_optional_attr_dict()
        _ensure_yield(then)
        _ensure_yield(other)
        op = cls.create(operands=[*dims, *syms], result_types=types, properties={"condition": cond},
                        regions=[then, other])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        s = self.condition.data
        args = list(self.args)
        printer.print_string(" ")
        printer.print_attribute(self.condition)
        printer.print_string("(")
        printer.print_list(args[: s.num_dims], printer.print_ssa_value)
        printer.print_string(")")
        if s.num_symbols:
            printer.print_string("[")
            printer.print_list(args[s.num_dims:], printer.print_ssa_value)
            printer.print_string("]")
        if self.res:
            printer.print_string(" -> (")
            printer.print_list(self.result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.then_region, print_block_terminators=bool(self.res))
        if self.else_region.blocks:
            printer.print_string(" else ")
            printer.print_region(self.else_region, print_block_terminators=bool(self.res))


# ----------------------------------------------------------------------------- parallel


class ParallelOp(_xaffine.ParallelOp):
    """``affine.parallel (%i, %j) = (lbs) to (ubs) step (s, t) reduce ("addf") -> (f64)``.

    One expression per bound (MLIR's ``max(...)``/``min(...)`` bound groups are
    refused by the parser); the operands are the lower bounds' values, then the
    upper bounds'."""

    name = "affine.parallel"

    @classmethod
    def parse(cls, parser: Parser) -> ParallelOp:
        ivs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False))
        parser.parse_punctuation("=")
        lbs, lb_ops = _parse_ssa_exprs(parser, Parser.Delimiter.PAREN)
        parser.parse_keyword("to")
        ubs, ub_ops = _parse_ssa_exprs(parser, Parser.Delimiter.PAREN)
        if len(lbs.results) != len(ivs) or len(ubs.results) != len(ivs):
            parser.raise_error("affine.parallel needs one lower and one upper bound per induction variable")
        steps = [1] * len(ivs)
        if parser.parse_optional_keyword("step") is not None:
            steps = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_integer)
        kinds: list[str] = []
        types: list[Attribute] = []
        if parser.parse_optional_keyword("reduce") is not None:
            kinds = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_str_literal)
            parser.parse_punctuation("->")
            parser.parse_punctuation("(")
            types = list(parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type))
            parser.parse_punctuation(")")
        body = parser.parse_region([iv.resolve(IndexType()) for iv in ivs])
        _ensure_yield(body)
        attrs = parser.parse_optional_attr_dict()
        n = len(ivs)
        ones = DenseIntOrFPElementsAttr.from_list(TensorType(i32, [n]), [1] * n)
        op = cls.create(
            operands=[*lb_ops, *ub_ops],
            result_types=types,
            properties={
                "reductions": ArrayAttr([StringAttr(k) for k in kinds]),
                "lowerBoundsMap": AffineMapAttr(lbs),
                "lowerBoundsGroups": ones,
                "upperBoundsMap": AffineMapAttr(AffineMap(0, ubs.num_symbols, ubs.results)),
                "upperBoundsGroups": ones,
                "steps": ArrayAttr([IntegerAttr(s, i64) for s in steps]),
            },
            regions=[body],
        )
        op.attributes |= attrs
        return op

    def verify_(self) -> None:
        lbs, ubs = self.lowerBoundsMap.data, self.upperBoundsMap.data
        if len(self.operands) != lbs.num_dims + lbs.num_symbols + ubs.num_dims + ubs.num_symbols:
            raise VerifyException("affine.parallel: the operands must be the bounds' values")
        if len(self.reductions.data) != len(self.res):
            raise VerifyException("affine.parallel: one reduction kind per result")

    @property
    def bound_operands(self) -> tuple[list[SSAValue], list[SSAValue]]:
        lbs = self.lowerBoundsMap.data
        n = lbs.num_dims + lbs.num_symbols
        return list(self.operands[:n]), list(self.operands[n:])

    def print(self, printer: Printer) -> None:
        lb_ops, ub_ops = self.bound_operands
        printer.print_string(" (")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(") = ")
        _print_ssa_exprs(printer, self.lowerBoundsMap.data.results, lb_ops, "()")
        printer.print_string(" to ")
        _print_ssa_exprs(printer, self.upperBoundsMap.data.results, ub_ops, "()")
        steps = [s.value.data for s in self.steps.data]
        if any(s != 1 for s in steps):
            printer.print_string(" step (" + ", ".join(map(str, steps)) + ")")
        if self.res:
            printer.print_string(" reduce (" + ", ".join(f'"{k.data}"' for k in self.reductions.data) + ") -> (")
            printer.print_list(self.result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=bool(self.res))


AFFINE_EXT = Dialect(
    "affine",
    [
        _xaffine.ApplyOp,
        _xaffine.ForOp,
        ParallelOp,
        IfOp,
        StoreOp,
        LoadOp,
        _xaffine.MinOp,
        MaxOp,
        _xaffine.YieldOp,
        _xaffine.VectorLoadOp,  # parsed, so that transforms/lower_affine refuses them by name
        _xaffine.VectorStoreOp,
    ],
    [],
)
