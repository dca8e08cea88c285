"""The registry of StableHLO rewrite patterns and the helpers they share.

A pattern is a function ``(op, rewriter) -> None`` for one root op class, registered
with :func:`rewrite` under a name and a one-line declarative summary (``"x + 0 -> x"``);
``transforms/hlo_rewrites.simplify`` applies every registered pattern, and
``zymase-opt --list-rewrites`` prints the table. The pattern families live in
``hlo_patterns_algebra.py`` (elementwise algebra), ``hlo_patterns_movement.py``
(slice, pad, concatenate, transpose, broadcast, reshape, reverse) and
``hlo_patterns_reduce.py`` (reduce and dot_general).

A pattern whose result differs from IEEE arithmetic in some corner (the sign of a zero,
``x * 0`` for an infinite ``x``) is registered with ``liberty=True``: it is applied to
derivative code only, never to the user's primal ops. No pattern turns a NaN into a
finite number: ``x * 0 -> 0`` needs an ``x`` that ``known_finite`` proves finite, since
JAX, whose derivatives zymase's must equal, has no strong zeros (``reduce_scaled``, a
factor out of a sum, may give an infinity where the sum of products had a ``0 * inf``
NaN beside other terms).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from zymase.ir import Attribute, DenseIntOrFPElementsAttr, Operation, PatternRewriter, SSAValue, TensorType
from zymase.ir import stablehlo as hlo


@dataclass(frozen=True)
class Rewrite:
    name: str
    root: type  # the op class the pattern matches
    summary: str  # the rewrite in one line, declaratively
    apply: Callable[[Operation, PatternRewriter], None]
    liberty: bool  # not exact in IEEE arithmetic: derivative code only
    reorders_sum: bool  # exact but for the order of a sum's additions (XLA's choice anyway)

    @property
    def exactness(self) -> str:
        if self.liberty:
            return "derivative code only"
        return "exact up to the order of a sum" if self.reorders_sum else "exact"


REWRITES: list[Rewrite] = []


def rewrite(root: type, name: str, summary: str, liberty: bool = False, reorders_sum: bool = False):
    """Register the decorated function as the pattern ``name`` rooted at ``root``."""

    def deco(fn):
        if any(r.name == name for r in REWRITES):
            raise ValueError(f"two StableHLO rewrites named {name}")
        REWRITES.append(Rewrite(name, root, summary, fn, liberty, reorders_sum))
        return fn

    return deco


# ----- helpers ------------------------------------------------------------------------
def splat_value(v: SSAValue) -> float | int | None:
    """The element of a splat ``stablehlo.constant`` (None for anything else)."""
    op = v.owner
    if not isinstance(op, hlo.ConstantOp) or not isinstance(op.value, DenseIntOrFPElementsAttr):
        return None
    values = op.value.get_values()
    if len(values) == 0 or any(x != values[0] for x in values[1:]):
        return None
    return values[0]


def is_zero(v: SSAValue) -> bool:
    x = splat_value(v)
    return x is not None and x == 0  # -0.0 too


def is_one(v: SSAValue) -> bool:
    x = splat_value(v)
    return x is not None and x == 1


def float_splat(v: SSAValue) -> float | None:
    """The element of a splat float constant (None for others, integers included)."""
    return splat_value(v) if hlo.is_float_tensor(v.type) else None


# ops whose result is finite when their float operands are (data movement, selection,
# sign changes); a float operand not listed for an op is an index or a predicate
_FINITE_THROUGH = {
    hlo.BroadcastInDimOp: (0,), hlo.ReshapeOp: (0,), hlo.TransposeOp: (0,), hlo.SliceOp: (0,), hlo.ReverseOp: (0,),
    hlo.PadOp: (0, 1), hlo.DynamicSliceOp: (0,), hlo.DynamicUpdateSliceOp: (0, 1), hlo.SelectOp: (1, 2),
    hlo.NegateOp: (0,), hlo.ELEMENTWISE["abs"]: (0,), hlo.MaximumOp: (0, 1), hlo.MinimumOp: (0, 1),
    hlo.ClampOp: (0, 1, 2),
}


def known_finite(v: SSAValue, depth: int = 8) -> bool:
    """Whether every element of ``v`` is finite for sure: an integer tensor, a constant of
    finite values, an iota, a conversion from integers, and data movement, selection
    and sign changes of such values (looked through ``depth`` ops deep)."""
    if not hlo.is_float_tensor(v.type):
        return True
    op = v.owner
    if isinstance(op, hlo.ConstantOp):
        return isinstance(op.value, DenseIntOrFPElementsAttr) and all(math.isfinite(x) for x in op.value.get_values())
    if isinstance(op, hlo.IotaOp):
        return True
    if isinstance(op, hlo.ConvertOp):
        return not hlo.is_float_tensor(op.operands[0].type) or (depth > 0 and known_finite(op.operands[0], depth - 1))
    if isinstance(op, hlo.ConcatenateOp):
        return depth > 0 and all(known_finite(x, depth - 1) for x in op.operands)
    through = _FINITE_THROUGH.get(type(op))
    return through is not None and depth > 0 and all(known_finite(op.operands[i], depth - 1) for i in through)


def make_splat(value, typ: Attribute) -> Operation:
    return hlo.ConstantOp.create(properties={"value": DenseIntOrFPElementsAttr.from_list(typ, [value])},
                                 result_types=[typ])


def replace_by(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replace ``op``'s one result by ``value`` (when the types agree)."""
    if value.type == op.results[0].type:
        rewriter.replace(op, [], [value])


def replace_by_splat(rewriter: PatternRewriter, op: Operation, value) -> None:
    rewriter.replace(op, make_splat(value, op.results[0].type))


def new(op_class, operands, result_type, **properties) -> Operation:
    return op_class.create(operands=list(operands), result_types=[result_type], properties=properties)


def ints(prop) -> list[int]:
    return list(prop.get_values())


def shape(v: SSAValue) -> list[int]:
    return list(v.type.get_shape())


def like(v: SSAValue, dims) -> TensorType:
    return TensorType(v.type.element_type, list(dims))


def single_use(v: SSAValue) -> bool:
    return len(list(v.uses)) == 1
