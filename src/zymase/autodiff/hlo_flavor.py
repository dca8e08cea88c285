"""The StableHLO flavor: the engine's arithmetic spelled as elementwise tensor ops.

With it, the dialect-neutral rules of ``rules/scalar.py`` (``FMUL``, ``MATH["tanh"]``,
...) serve StableHLO's elementwise ops unchanged: every operand of an elementwise op
has the result's shape, so ``E.mul(dy, P.arg(1))`` is ``stablehlo.multiply`` on two
tensors of one type and ``E.const_like(1.0, dy)`` is a splat ``stablehlo.constant``.
Only the arithmetic part of :class:`~zymase.autodiff.flavor.Flavor` is implemented:
StableHLO functions have no branches (control flow is region ops with rules of their
own, ``rules/stablehlo_control.py``).

The type rule registered here makes float tensors differentiable (zero: a splat 0,
sum: ``stablehlo.add``); integer and boolean tensors stay inactive.
"""

from __future__ import annotations

from zymase.autodiff.flavor import Flavor
from zymase.autodiff.type_rules import TypeRule, register_type
from zymase.errors import ZymaseError
from zymase.ir import Attribute, DenseIntOrFPElementsAttr, SSAValue, TensorType, i1
from zymase.ir import chlo
from zymase.ir import stablehlo as hlo

_DIRECTION = {"olt": "LT", "ole": "LE", "ogt": "GT", "oge": "GE", "oeq": "EQ", "one": "NE", "une": "NE", "ult": "LT"}

# neutral math names (the MATH table's) to StableHLO elementwise ops
_UNARY = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exponential", "expm1": "exponential_minus_one", "log": "log",
    "log1p": "log_plus_one", "sin": "sine", "cos": "cosine", "tan": "tan", "tanh": "tanh", "cbrt": "cbrt",
    "fabs": "abs", "floor": "floor", "ceil": "ceil", "sign": "sign", "logistic": "logistic",
    "roundeven": "round_nearest_even", "round": "round_nearest_afz", "rint": "round_nearest_even",
}
_BINARY = {"pow": "power", "fmin": "minimum", "fmax": "maximum", "atan2": "atan2"}
# neutral math names StableHLO spells in CHLO (ir/chlo.py): what the rules of sinh,
# cosh and lgamma emit
_CHLO_UNARY = {"sinh": "sinh", "cosh": "cosh", "digamma": "digamma", "erf": "erf", "atan": "atan"}


def _typed(op_class, operands, result_type):
    return op_class.create(operands=list(operands), result_types=[result_type])


def splat(value: float | int, typ: Attribute):
    """A ``stablehlo.constant`` of type ``typ`` (a tensor) with every element ``value``."""
    return hlo.ConstantOp.create(properties={"value": DenseIntOrFPElementsAttr.from_list(typ, [value])},
                                 result_types=[typ])


def _bool_like(t: Attribute) -> TensorType:
    return TensorType(i1, t.get_shape())


class HloFlavor(Flavor):
    name = "stablehlo"

    _BIN = {"add": hlo.AddOp, "sub": hlo.SubtractOp, "mul": hlo.MultiplyOp, "div": hlo.DivideOp}

    def const(self, value, typ):
        return splat(value, typ)

    def iconst(self, value, typ):
        return splat(int(value), typ)

    def binary(self, kind, a, b):
        return _typed(self._BIN[kind], (a, b), a.type)

    def neg(self, a):
        return _typed(hlo.NegateOp, (a,), a.type)

    def select(self, c, a, b):
        return _typed(hlo.SelectOp, (c, a, b), a.type)

    def fcmp(self, pred, a, b):
        return hlo.CompareOp.create(
            operands=[a, b], result_types=[_bool_like(a.type)],
            properties={"comparison_direction": hlo.comparison(_DIRECTION[pred]),
                        "compare_type": hlo.comparison_type("FLOAT")})

    def icmp_eq(self, a, b):
        return hlo.CompareOp.create(operands=[a, b], result_types=[_bool_like(a.type)],
                                    properties={"comparison_direction": hlo.comparison("EQ")})

    def fconv(self, v, typ):
        return _typed(hlo.ConvertOp, (v,), typ)

    def sitofp(self, v, typ):
        return _typed(hlo.ConvertOp, (v,), typ)

    def isub(self, a, b):
        return _typed(hlo.SubtractOp, (a, b), a.type)

    def iadd(self, a, b):
        return _typed(hlo.AddOp, (a, b), a.type)

    def fn(self, emitter, name, args):
        if name in _UNARY:
            return emitter.v(_typed(hlo.ELEMENTWISE[_UNARY[name]], args[:1], args[0].type))
        if name in _CHLO_UNARY:
            return emitter.v(_typed(chlo.ELEMENTWISE[_CHLO_UNARY[name]], args[:1], args[0].type))
        if name in _BINARY:
            return emitter.v(_typed(hlo.ELEMENTWISE[_BINARY[name]], args[:2], args[0].type))
        if name == "copysign":
            # |a| with the sign of b (a -0.0 in b counts as positive)
            a, b = args
            mag = emitter.fn("fabs", a)
            return emitter.select(emitter.fcmp("olt", b, emitter.zero(b.type)), emitter.neg(mag), mag)
        if name == "trunc":
            x = args[0]
            return emitter.select(emitter.fcmp("olt", x, emitter.zero(x.type)), emitter.fn("ceil", x),
                                  emitter.fn("floor", x))
        if name == "fma":
            return emitter.add(emitter.mul(args[0], args[1]), args[2])
        raise ZymaseError(f"no StableHLO op for the math function '{name}'", construct=name)

    def is_constant(self, op):
        return isinstance(op, hlo.ConstantOp)

    def fast_math(self, op):
        return frozenset()

    def set_fast_math(self, op, flags):
        pass  # StableHLO has no fast-math flags


HLO = HloFlavor()


def _tensor_zero(E, t: Attribute) -> SSAValue:
    return E.v(splat(0.0, t))


def _tensor_add(E, a: SSAValue, b: SSAValue) -> SSAValue:
    return E.v(_typed(hlo.AddOp, (a, b), a.type))


register_type(TensorType, TypeRule(zero=_tensor_zero, add=_tensor_add, applies=hlo.is_float_tensor))




# ----- tensor builders the rules share (each inserts at the emitter's point) ---------
def shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _like(v: SSAValue, dims) -> TensorType:
    return TensorType(v.type.element_type, list(dims))


def emit(E, op_class, operands, result_type, **properties) -> SSAValue:
    """Insert ``op_class`` (a StableHLO op) with one result."""
    return E.v(op_class.create(operands=list(operands), result_types=[result_type], properties=properties))


def reshape(E, v: SSAValue, dims) -> SSAValue:
    return v if shape(v) == tuple(dims) else emit(E, hlo.ReshapeOp, [v], _like(v, dims))


def transpose(E, v: SSAValue, permutation) -> SSAValue:
    """Result dim i is ``v``'s dim ``permutation[i]``."""
    permutation = list(permutation)
    if permutation == sorted(permutation):
        return v
    dims = [shape(v)[p] for p in permutation]
    return emit(E, hlo.TransposeOp, [v], _like(v, dims), permutation=hlo.array(permutation))


def broadcast(E, v: SSAValue, dims, mapping) -> SSAValue:
    """``broadcast_in_dim``: ``v``'s dim i becomes result dim ``mapping[i]``."""
    if shape(v) == tuple(dims) and list(mapping) == list(range(len(dims))):
        return v
    return emit(E, hlo.BroadcastInDimOp, [v], _like(v, dims), broadcast_dimensions=hlo.array(mapping))


def broadcast_to(E, v: SSAValue, like: SSAValue, kept) -> SSAValue:
    """``v`` (the reduction of a ``like``-shaped tensor over the dims not in ``kept``)
    broadcast back to ``like``'s shape."""
    return broadcast(E, v, shape(like), sorted(kept))


def _reducer(element_type, combiner) -> "Region":
    from zymase.ir import Block, Region

    scalar = TensorType(element_type, [])
    block = Block(arg_types=[scalar, scalar])
    combined = combiner.create(operands=list(block.args), result_types=[scalar])
    block.add_op(combined)
    block.add_op(hlo.ReturnOp.create(operands=[combined.results[0]]))
    return Region(block)


def reduce(E, v: SSAValue, dims, combiner=hlo.AddOp, init: float = 0.0) -> SSAValue:
    """``v`` reduced over ``dims`` with ``combiner`` (a sum by default)."""
    dims = sorted(dims)
    if not dims:
        return v
    element = v.type.element_type
    out = [d for i, d in enumerate(shape(v)) if i not in dims]
    init_value = E.v(splat(init, TensorType(element, [])))
    op = hlo.ReduceOp.create(operands=[v, init_value], result_types=[_like(v, out)],
                             properties={"dimensions": hlo.array(dims)}, regions=[_reducer(element, combiner)])
    return E.insert(op).results[0]


def slice_(E, v: SSAValue, start, limit, strides=None) -> SSAValue:
    strides = list(strides) if strides is not None else [1] * len(start)
    dims = [(hi - lo + s - 1) // s for lo, hi, s in zip(start, limit, strides)]
    if tuple(dims) == shape(v):
        return v
    return emit(E, hlo.SliceOp, [v], _like(v, dims), start_indices=hlo.array(start),
                limit_indices=hlo.array(limit), strides=hlo.array(strides))


def pad(E, v: SSAValue, low, high, interior) -> SSAValue:
    """``v`` padded with zeros."""
    dims = [lo + hi + n + max(n - 1, 0) * it for n, lo, hi, it in zip(shape(v), low, high, interior)]
    zero = E.v(splat(0.0, TensorType(v.type.element_type, [])))
    return emit(E, hlo.PadOp, [v, zero], _like(v, dims), edge_padding_low=hlo.array(low),
                edge_padding_high=hlo.array(high), interior_padding=hlo.array(interior))


def dot_general(E, a: SSAValue, b: SSAValue, a_batch, b_batch, a_contract, b_contract,
                element_type=None) -> SSAValue:
    """``stablehlo.dot_general``: result dims are the batch dims, then ``a``'s free dims,
    then ``b``'s, each in order; elements of ``a``'s type unless ``element_type`` is given
    (a widening product: ``preferred_element_type=jnp.float32`` of bf16 operands)."""
    sa, sb = shape(a), shape(b)
    dims = [sa[d] for d in a_batch]
    dims += [n for i, n in enumerate(sa) if i not in a_batch and i not in a_contract]
    dims += [n for i, n in enumerate(sb) if i not in b_batch and i not in b_contract]
    return emit(E, hlo.DotGeneralOp, [a, b], TensorType(element_type or a.type.element_type, dims),
                dot_dimension_numbers=hlo.dot_dims(a_batch, b_batch, a_contract, b_contract))
