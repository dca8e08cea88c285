"""``scf.parallel`` as MLIR prints it, which xDSL 0.74 cannot parse.

xDSL's ``scf.parallel`` has no custom assembly format, and its ``scf.reduce``
reads several reduction regions without MLIR's commas. The subclass here reads and
prints MLIR's ``scf.parallel (%i, %j) = (%lb0, %lb1) to (%ub0, %ub1) step (%s0, %s1)
init (%v) -> (f64) { ... }`` (its operands, region and ``scf.reduce`` terminator are
xDSL's); :data:`SCF_EXT` is xDSL's scf dialect with it, as
:mod:`zymase.ir.memref_ext` extends ``memref``. xDSL is never patched.
"""

from __future__ import annotations

from xdsl.dialects import scf as _xscf
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Dialect
from xdsl.parser import Parser
from xdsl.printer import Printer

__all__ = ["ParallelOp", "ReduceOp", "SCF_EXT"]


class ParallelOp(_xscf.ParallelOp):
    """``scf.parallel`` with MLIR's textual form (the terminator ``scf.reduce`` may be
    left out when there is nothing to reduce)."""

    name = "scf.parallel"

    @classmethod
    def parse(cls, parser: Parser) -> ParallelOp:
        index = IndexType()

        def operands():
            return parser.parse_comma_separated_list(Parser.Delimiter.PAREN, lambda: parser.parse_operand(index))

        ivs = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, lambda: parser.parse_argument(expect_type=False))
        parser.parse_punctuation("=")
        lbs = operands()
        parser.parse_keyword("to")
        ubs = operands()
        parser.parse_keyword("step")
        steps = operands()
        inits = []
        if parser.parse_optional_keyword("init") is not None:
            unresolved = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_unresolved_operand)
            parser.parse_punctuation("->")
            if parser.parse_optional_punctuation("(") is not None:
                types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
                parser.parse_punctuation(")")
            else:
                types = [parser.parse_type()]
            inits = [parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)]
        body = parser.parse_region([iv.resolve(index) for iv in ivs])
        block = body.block
        if block.last_op is None or not isinstance(block.last_op, _xscf.ReduceOp):
            block.add_op(ReduceOp())
        attrs = parser.parse_optional_attr_dict()
        op = cls(lbs, ubs, steps, body, inits)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        def values(vs) -> None:
            printer.print_string("(")
            printer.print_list(vs, printer.print_ssa_value)
            printer.print_string(")")

        printer.print_string(" ")
        values(self.body.block.args)
        printer.print_string(" = ")
        values(self.lowerBound)
        printer.print_string(" to ")
        values(self.upperBound)
        printer.print_string(" step ")
        values(self.step)
        if self.initVals:
            printer.print_string(" init ")
            values(self.initVals)
            printer.print_string(" -> (")
            printer.print_list(self.result_types, printer.print_attribute)
            printer.print_string(")")
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=bool(self.initVals))


class ReduceOp(_xscf.ReduceOp):
    """``scf.reduce(%a, %b : f64, f64) { ... }, { ... }``: MLIR separates the
    reduction regions by commas, xDSL's format does not."""

    name = "scf.reduce"

    @classmethod
    def parse(cls, parser: Parser) -> ReduceOp:
        args = []
        if parser.parse_optional_punctuation("(") is not None:
            unresolved = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_unresolved_operand)
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
            parser.parse_punctuation(")")
            args = [parser.resolve_operand(u, t) for u, t in zip(unresolved, types, strict=True)]
        regions = []
        if args:
            regions.append(parser.parse_region())
            while parser.parse_optional_punctuation(",") is not None:
                regions.append(parser.parse_region())
        attrs = parser.parse_optional_attr_dict()
        op = cls(args, regions)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        if self.args:
            printer.print_string("(")
            printer.print_list(self.args, printer.print_ssa_value)
            printer.print_string(" : ")
            printer.print_list([a.type for a in self.args], printer.print_attribute)
            printer.print_string(") ")
            printer.print_list(self.reductions, printer.print_region)


_OURS = {_xscf.ParallelOp: ParallelOp, _xscf.ReduceOp: ReduceOp}

SCF_EXT = Dialect(
    "scf",
    [_OURS.get(op, op) for op in _xscf.Scf.operations],
    list(_xscf.Scf.attributes),
)
