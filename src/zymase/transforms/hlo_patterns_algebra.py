"""StableHLO rewrites of elementwise algebra: identities of add, subtract, multiply,
divide, negate, abs, maximum/minimum, power, select, boolean ops, conversions, and the
folding of splat constants. Registered in ``hlo_rewrite_base.REWRITES``.

Every pattern keeps the value bit for bit, except those marked ``liberty`` (derivative
code only): ``x + 0 -> x`` and ``0 - x -> -x`` (the sign of a zero), ``x - x -> 0`` and
``x * 0 -> 0`` (for an x known to be finite: the sign of a zero), ``-(x - y) -> y - x``.
"""

from __future__ import annotations

from zymase.ir import stablehlo as hlo
from zymase.transforms.hlo_rewrite_base import (
    float_splat,
    is_one,
    is_zero,
    known_finite,
    new,
    replace_by,
    replace_by_splat,
    rewrite,
    splat_value,
)

E = hlo.ELEMENTWISE


def _negated(v):
    """x when v is ``negate(x)``, else None."""
    return v.owner.operands[0] if isinstance(v.owner, hlo.NegateOp) else None


# ----- add / subtract ---------------------------------------------------------------
@rewrite(hlo.AddOp, "add_zero", "x + 0 -> x; 0 + x -> x", liberty=True)
def add_zero(op, rewriter):
    a, b = op.operands
    if is_zero(b):
        replace_by(rewriter, op, a)
    elif is_zero(a):
        replace_by(rewriter, op, b)


@rewrite(hlo.AddOp, "add_negate", "x + (-y) -> x - y; (-x) + y -> y - x")
def add_negate(op, rewriter):
    a, b = op.operands
    if (y := _negated(b)) is not None:
        rewriter.replace(op, new(hlo.SubtractOp, [a, y], op.results[0].type))
    elif (x := _negated(a)) is not None:
        rewriter.replace(op, new(hlo.SubtractOp, [b, x], op.results[0].type))


@rewrite(hlo.SubtractOp, "subtract_zero", "x - 0 -> x")
def subtract_zero(op, rewriter):
    if is_zero(op.operands[1]):
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.SubtractOp, "zero_subtract", "0 - x -> -x", liberty=True)
def zero_subtract(op, rewriter):
    if is_zero(op.operands[0]) and hlo.is_float_tensor(op.results[0].type):
        rewriter.replace(op, new(hlo.NegateOp, [op.operands[1]], op.results[0].type))


@rewrite(hlo.SubtractOp, "subtract_self", "x - x -> 0", liberty=True)
def subtract_self(op, rewriter):
    if op.operands[0] is op.operands[1] and hlo.is_float_tensor(op.results[0].type):
        replace_by_splat(rewriter, op, 0.0)


@rewrite(hlo.SubtractOp, "subtract_negate", "x - (-y) -> x + y")
def subtract_negate(op, rewriter):
    if (y := _negated(op.operands[1])) is not None:
        rewriter.replace(op, new(hlo.AddOp, [op.operands[0], y], op.results[0].type))


# ----- multiply / divide / power ----------------------------------------------------
@rewrite(hlo.MultiplyOp, "multiply_one", "x * 1 -> x; 1 * x -> x")
def multiply_one(op, rewriter):
    a, b = op.operands
    if is_one(b):
        replace_by(rewriter, op, a)
    elif is_one(a):
        replace_by(rewriter, op, b)


@rewrite(hlo.MultiplyOp, "multiply_zero", "x * 0 -> 0; 0 * x -> 0 (x known finite)", liberty=True)
def multiply_zero(op, rewriter):
    """Only for a finite x: an infinite or NaN one makes NaN, which JAX's derivative has
    too (``logaddexp(log(0 x), x)``); folding it would turn JAX's NaN into a number."""
    a, b = op.operands
    if not hlo.is_float_tensor(op.results[0].type):
        return
    if (float_splat(b) == 0 and known_finite(a)) or (float_splat(a) == 0 and known_finite(b)):
        replace_by_splat(rewriter, op, 0.0)


@rewrite(hlo.MultiplyOp, "multiply_minus_one", "x * -1 -> -x; -1 * x -> -x")
def multiply_minus_one(op, rewriter):
    a, b = op.operands
    for x, c in ((a, b), (b, a)):
        if float_splat(c) == -1:
            rewriter.replace(op, new(hlo.NegateOp, [x], op.results[0].type))
            return


@rewrite(hlo.MultiplyOp, "multiply_negates", "(-x) * (-y) -> x * y")
def multiply_negates(op, rewriter):
    x, y = (_negated(v) for v in op.operands)
    if x is not None and y is not None:
        rewriter.replace(op, new(hlo.MultiplyOp, [x, y], op.results[0].type))


@rewrite(hlo.DivideOp, "divide_one", "x / 1 -> x")
def divide_one(op, rewriter):
    if hlo.is_float_tensor(op.results[0].type) and is_one(op.operands[1]):
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.DivideOp, "divide_minus_one", "x / -1 -> -x")
def divide_minus_one(op, rewriter):
    if float_splat(op.operands[1]) == -1:
        rewriter.replace(op, new(hlo.NegateOp, [op.operands[0]], op.results[0].type))


@rewrite(E["power"], "power_one", "x ^ 1 -> x")
def power_one(op, rewriter):
    if float_splat(op.operands[1]) == 1:
        replace_by(rewriter, op, op.operands[0])


# ----- negate / abs / max / min -----------------------------------------------------
@rewrite(hlo.NegateOp, "negate_negate", "-(-x) -> x")
def negate_negate(op, rewriter):
    if (x := _negated(op.operands[0])) is not None:
        replace_by(rewriter, op, x)


@rewrite(hlo.NegateOp, "negate_subtract", "-(x - y) -> y - x", liberty=True)
def negate_subtract(op, rewriter):
    inner = op.operands[0].owner
    if isinstance(inner, hlo.SubtractOp) and hlo.is_float_tensor(op.results[0].type):
        rewriter.replace(op, new(hlo.SubtractOp, [inner.operands[1], inner.operands[0]], op.results[0].type))


@rewrite(E["abs"], "abs_abs", "|(|x|)| -> |x|")
def abs_abs(op, rewriter):
    if isinstance(op.operands[0].owner, E["abs"]):
        replace_by(rewriter, op, op.operands[0])


@rewrite(E["abs"], "abs_negate", "|-x| -> |x|")
def abs_negate(op, rewriter):
    if (x := _negated(op.operands[0])) is not None:
        rewriter.replace(op, new(E["abs"], [x], op.results[0].type))


@rewrite(hlo.MaximumOp, "maximum_self", "max(x, x) -> x")
def maximum_self(op, rewriter):
    if op.operands[0] is op.operands[1]:
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.MinimumOp, "minimum_self", "min(x, x) -> x")
def minimum_self(op, rewriter):
    if op.operands[0] is op.operands[1]:
        replace_by(rewriter, op, op.operands[0])


# ----- constants --------------------------------------------------------------------
_FOLDABLE = {
    hlo.AddOp: lambda a, b: a + b,
    hlo.SubtractOp: lambda a, b: a - b,
    hlo.MultiplyOp: lambda a, b: a * b,
    hlo.DivideOp: lambda a, b: a / b,
    hlo.MaximumOp: max,
    hlo.MinimumOp: min,
}


def _fold_splats(op, rewriter):
    """The operation on two splat float constants, computed in double precision and
    rounded once to the element type: exact for f16/f32/f64 (double has more than
    twice their precision plus two bits). NaNs and division by zero are left to XLA."""
    a, b = (float_splat(v) for v in op.operands)
    if a is None or b is None or a != a or b != b or (type(op) is hlo.DivideOp and b == 0):
        return
    if op.results[0].type.element_type.name not in ("f16", "f32", "f64"):
        return
    replace_by_splat(rewriter, op, _FOLDABLE[type(op)](a, b))


for _cls in _FOLDABLE:
    rewrite(_cls, f"fold_{_cls.name.split('.')[1]}_splats", f"{_cls.name.split('.')[1]}(splat a, splat b) -> "
            "splat(a op b)")(_fold_splats)


@rewrite(hlo.NegateOp, "fold_negate_splat", "-(splat c) -> splat(-c)")
def fold_negate_splat(op, rewriter):
    c = float_splat(op.operands[0])
    if c is not None:
        replace_by_splat(rewriter, op, -c)


@rewrite(hlo.ConvertOp, "fold_convert_splat", "convert(splat c : f_a) to f_b -> splat(c) : f_b (rounded once)")
def fold_convert_splat(op, rewriter):
    c = float_splat(op.operands[0])
    if c is not None and hlo.is_float_tensor(op.results[0].type):
        replace_by_splat(rewriter, op, c)


# ----- select and booleans ----------------------------------------------------------
@rewrite(hlo.SelectOp, "select_same", "select(p, x, x) -> x")
def select_same(op, rewriter):
    if op.operands[1] is op.operands[2]:
        replace_by(rewriter, op, op.operands[1])


@rewrite(hlo.SelectOp, "select_constant_predicate", "select(true, a, b) -> a; select(false, a, b) -> b")
def select_constant_predicate(op, rewriter):
    p = splat_value(op.operands[0])
    if p is not None:
        replace_by(rewriter, op, op.operands[1] if p else op.operands[2])


@rewrite(hlo.SelectOp, "select_not", "select(not p, a, b) -> select(p, b, a)")
def select_not(op, rewriter):
    inner = op.operands[0].owner
    if isinstance(inner, E["not"]):
        rewriter.replace(op, new(hlo.SelectOp, [inner.operands[0], op.operands[2], op.operands[1]],
                                 op.results[0].type))


@rewrite(hlo.SelectOp, "select_nested", "select(p, select(p, a, b), c) -> select(p, a, c); "
         "select(p, a, select(p, b, c)) -> select(p, a, c)")
def select_nested(op, rewriter):
    p, a, c = op.operands
    for i, side in ((1, a), (2, c)):
        inner = side.owner
        if isinstance(inner, hlo.SelectOp) and inner.operands[0] is p and inner.results[0].type == side.type:
            operands = list(op.operands)
            operands[i] = inner.operands[i]
            rewriter.replace(op, new(hlo.SelectOp, operands, op.results[0].type))
            return


@rewrite(E["not"], "not_not", "not(not p) -> p")
def not_not(op, rewriter):
    inner = op.operands[0].owner
    if isinstance(inner, E["not"]):
        replace_by(rewriter, op, inner.operands[0])


@rewrite(E["and"], "and_self", "and(p, p) -> p")
def and_self(op, rewriter):
    if op.operands[0] is op.operands[1]:
        replace_by(rewriter, op, op.operands[0])


@rewrite(E["or"], "or_self", "or(p, p) -> p")
def or_self(op, rewriter):
    if op.operands[0] is op.operands[1]:
        replace_by(rewriter, op, op.operands[0])


# ----- conversions --------------------------------------------------------------------
def _widening(a, b) -> bool:
    from zymase.ir import float_width, is_float_type

    return is_float_type(a) and is_float_type(b) and float_width(b) >= float_width(a)


@rewrite(hlo.ConvertOp, "convert_same", "convert(x : T) to T -> x")
def convert_same(op, rewriter):
    if op.operands[0].type == op.results[0].type:
        replace_by(rewriter, op, op.operands[0])


@rewrite(hlo.ConvertOp, "convert_round_trip", "convert(convert(x : f32) to f64) to f32 -> x (widening is exact)")
def convert_round_trip(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.ConvertOp):
        return
    x = inner.operands[0]
    if x.type == op.results[0].type and _widening(x.type.element_type, inner.results[0].type.element_type):
        replace_by(rewriter, op, x)


@rewrite(hlo.ConvertOp, "convert_after_widening", "convert(convert(x : f_a) to wider f_b) to f_c -> "
         "convert(x) to f_c")
def convert_after_widening(op, rewriter):
    inner = op.operands[0].owner
    if not isinstance(inner, hlo.ConvertOp):
        return
    x = inner.operands[0]
    if x.type == op.results[0].type:
        return  # convert_round_trip's
    from zymase.ir import is_float_type

    if _widening(x.type.element_type, inner.results[0].type.element_type) and is_float_type(
            op.results[0].type.element_type):
        rewriter.replace(op, new(hlo.ConvertOp, [x], op.results[0].type))
