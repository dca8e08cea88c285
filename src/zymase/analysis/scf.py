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

from zymase.ir import Block, OpClasses, Operation, SSAValue

# (named: the C and Numba paths do not import the scf dialect, zymase/ir/on_first_use.py)
STRUCTURED = OpClasses("scf.ForOp", "scf.IfOp", "scf.WhileOp")
_FOR, _IF, _WHILE, _CONDITION = (OpClasses(f"scf.{name}") for name in ("ForOp", "IfOp", "WhileOp", "ConditionOp"))


def _terminator_operands(block: Block) -> list[SSAValue]:
    term = block.last_op
    if isinstance(term, _CONDITION):
        return list(term.args)
    return list(term.operands) if term is not None else []


def value_flow(op: Operation) -> list[tuple[SSAValue, SSAValue]]:
    """The (destination, source) value edges of a structured op (empty for others)."""
    edges: list[tuple[SSAValue, SSAValue]] = []
    if not op.regions:  # (most ops: no class test needed)
        return edges
    if isinstance(op, _FOR):
        body = op.body.block
        yielded = _terminator_operands(body)
        for arg, init, y, res in zip(body.args[1:], op.iter_args, yielded, op.results):
            edges += [(arg, init), (arg, y), (res, y), (res, init)]  # zero trips: result = init
    elif op.name == "stablehlo.case":  # like scf.if with n branches (lax.cond, lax.switch); by name, so
        # that the C path does not import the StableHLO dialect (zymase.ir's docstring)
        for region in op.regions:
            for res, y in zip(op.results, _terminator_operands(region.block)):
                edges.append((res, y))
    elif isinstance(op, _IF):
        for region in (op.true_region, op.false_region):
            if region.blocks:
                for res, y in zip(op.results, _terminator_operands(region.block)):
                    edges.append((res, y))
    elif isinstance(op, _WHILE):
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
