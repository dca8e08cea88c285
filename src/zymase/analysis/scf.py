"""Value flow through structured control flow (``scf.for``, ``scf.if``, ``scf.while``).

A region-carrying op passes values the way branches pass block arguments: an
``scf.for`` hands its ``iter_args`` operands to the body's arguments, the body's
``scf.yield`` hands them to the next iteration and to the op's results; ``scf.if``
results come from either branch's yield; ``scf.while`` moves values between its
``before`` and ``after`` regions through ``scf.condition``; ``stablehlo.case`` results
come from one of its branches' returns, as ``scf.if``'s do. :func:`value_flow` lists
these edges as ``(destination, source)`` pairs so that activity analysis treats
region arguments and results like block arguments (a destination is varied when a
source is, a source is useful when a destination is).
"""

from __future__ import annotations

from zymase.ir import Block, Operation, SSAValue, scf
from zymase.analysis.op_classes import is_a

STRUCTURED = (scf.ForOp, scf.IfOp, scf.WhileOp)


def _terminator_operands(block: Block) -> list[SSAValue]:
    term = block.last_op
    if isinstance(term, scf.ConditionOp):
        return list(term.args)
    return list(term.operands) if term is not None else []


def value_flow(op: Operation) -> list[tuple[SSAValue, SSAValue]]:
    """The (destination, source) value edges of a structured op (empty for others)."""
    edges: list[tuple[SSAValue, SSAValue]] = []
    if is_a(op, scf.ForOp):
        body = op.body.block
        yielded = _terminator_operands(body)
        for arg, init, y, res in zip(body.args[1:], op.iter_args, yielded, op.results):
            edges += [(arg, init), (arg, y), (res, y), (res, init)]  # zero trips: result = init
    elif op.name == "stablehlo.case":  # like scf.if with n branches (lax.cond, lax.switch); by name, so
        # that the C path does not import the StableHLO dialect (zymase.ir's docstring)
        for region in op.regions:
            for res, y in zip(op.results, _terminator_operands(region.block)):
                edges.append((res, y))
    elif is_a(op, scf.IfOp):
        for region in (op.true_region, op.false_region):
            if region.blocks:
                for res, y in zip(op.results, _terminator_operands(region.block)):
                    edges.append((res, y))
    elif is_a(op, scf.WhileOp):
        before, after = op.before_region.block, op.after_region.block
        carried = _terminator_operands(before)
        for arg, init, y in zip(before.args, op.arguments, _terminator_operands(after)):
            edges += [(arg, init), (arg, y)]
        for arg, res, c in zip(after.args, op.results, carried):
            edges += [(arg, c), (res, c)]
    return edges


def nested_blocks(region) -> list[Block]:
    """Every block of ``region`` and of the regions nested in it, outer ones first."""
    out: list[Block] = []
    for block in region.blocks:
        out.append(block)
        for op in block.ops:
            for r in op.regions:
                out += nested_blocks(r)
    return out
