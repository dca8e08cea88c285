"""Building blocks of the StableHLO control-flow rules (``stablehlo_control.py``,
``stablehlo_scan.py``): copying a region's block inline, building a ``stablehlo.while``
from two callbacks, the scalar counter arithmetic the generated loops count with, and
the activity of a copied body."""

from __future__ import annotations

from zymase.autodiff import hlo as hlo_ad
from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.flavor import Emitter
from zymase.ir import Block, IntegerType, Region, SSAValue, TensorType
from zymase.ir import stablehlo as hlo

I64 = TensorType(IntegerType(64), [])


class Mapped:
    """Activity of a copied body: the copy's values active where the original's are."""

    def __init__(self, active: set[SSAValue]):
        self.active = active

    def is_active(self, v: SSAValue) -> bool:
        return v in self.active

    def op_is_active(self, op) -> bool:
        return any(r in self.active for r in op.results)


def inline(E: Emitter, region: Region, args: list[SSAValue]) -> tuple[list[SSAValue], list, dict]:
    """Copy ``region``'s single block at ``E`` with its arguments bound to ``args``;
    returns the copied terminator's operands, the copied ops (in the block's order) and
    the value mapping."""
    block = region.blocks[0]
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args))
    copied = []
    for op in block.ops:
        if op is block.last_op:
            break
        copy = op.clone(value_mapper=mapping)
        E.insert(copy)
        copied.append(copy)
    return [mapping.get(v, v) for v in block.last_op.operands], copied, mapping


def inline_body(E: Emitter, region: Region, args: list[SSAValue], info, function: str):
    """A copy of a loop body (``inline``), refused if it reads an active value from outside
    the loop; returns its results, its ops and the copies of the values ``info`` (the body's
    activity) finds active."""
    returned, copied, mapping = inline(E, region, args)
    hlo_ad.refuse_active_captures(copied, {mapping[v] for v in info.varied if v in mapping}, function)
    return returned, copied, {mapping[v] for v in info.useful & info.varied if v in mapping}


def build_block(E: Emitter, types, build) -> Block:
    """A block with arguments of ``types`` whose ops ``build(emitter, args)`` makes and
    whose ``stablehlo.return`` returns what it returns."""
    block = Block(arg_types=types)
    inner = Emitter(E.flavor, E.module).at_end(block)
    values = build(inner, list(block.args))
    block.add_op(hlo.ReturnOp.create(operands=list(values)))
    return block


def while_op(E: Emitter, operands: list[SSAValue], cond: Block, body: Block) -> hlo.WhileOp:
    """Insert a ``stablehlo.while`` on ``operands`` with these condition and body blocks."""
    op = hlo.WhileOp.create(operands=list(operands), result_types=[v.type for v in operands],
                            regions=[Region(cond), Region(body)])
    E.insert(op)
    return op


def while_(E: Emitter, operands: list[SSAValue], cond, body) -> list[SSAValue]:
    """Insert a ``stablehlo.while`` on ``operands``; ``cond(E, args)`` returns the
    predicate, ``body(E, args)`` the next values, each built in a fresh block."""
    types = [v.type for v in operands]
    return list(while_op(E, operands, build_block(E, types, cond), build_block(E, types, body)).results)


def compare(E: Emitter, a: SSAValue, b: SSAValue, direction: str) -> SSAValue:
    op = hlo.CompareOp.create(operands=[a, b], result_types=[TensorType(IntegerType(1), [])],
                              properties={"comparison_direction": hlo.comparison(direction),
                                          "compare_type": hlo.comparison_type("SIGNED")})
    return E.v(op)


def step(E: Emitter, counter: SSAValue, by: int) -> SSAValue:
    return E.v(hlo.AddOp.create(operands=[counter, E.v(T.splat(by, counter.type))], result_types=[counter.type]))


def constant(v: SSAValue) -> int | None:
    """The value of a scalar integer ``stablehlo.constant``, else None."""
    op = v.owner
    if not isinstance(op, hlo.ConstantOp) or v.type.get_shape() or hlo.is_float_tensor(v.type):
        return None
    values = op.value.get_values()
    return int(values[0]) if len(values) == 1 else None


def down_to_zero(E: Emitter, args: list[SSAValue]) -> list[SSAValue]:
    """The condition of a reverse loop whose first carried value counts down: ``j >= 0``."""
    return [compare(E, args[0], E.v(T.splat(0, args[0].type)), "GE")]
