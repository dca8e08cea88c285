"""Rules for StableHLO's windowed ops: ``reduce_window`` with a sum, max or min body
(``lax.reduce_window``, ``flax``/``jax.example_libraries`` pooling, ``jnp.cumsum``) and
``convolution`` (``lax.conv_general_dilated``).

* reduce_window sum is linear: the tangent is the same window sum of the tangent; the
  adjoint spreads each output's adjoint over its window, which is a window sum of the
  adjoint padded (by the stride, inside, and the window less the padding, outside).
* reduce_window max/min: the adjoint goes to the chosen element of each window
  (``select_and_scatter`` with a ``>=`` / ``<=`` select, as JAX does); the tangent is
  the chosen element's tangent (a reduce_window over (value, tangent) pairs).
* convolution is bilinear: tangents are convolutions with the tangents; adjoints are in
  ``rules/stablehlo_conv.py``.

Base and window dilations are refused (named, with the JAX function).
"""

from __future__ import annotations

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import REGISTRY, Rule
from zymase.autodiff.rules.stablehlo import _region_kind
from zymase.errors import ZymaseError
from zymase.ir import Block, Region, TensorType, i1, location_of
from zymase.ir import stablehlo as hlo


def _ints(op, name, default):
    prop = op.properties.get(name)
    return list(prop.get_values()) if prop is not None else [default] * len(T.shape(op.operands[0]))


def _padding(op) -> list[tuple[int, int]]:
    prop = op.properties.get("padding")
    rank = len(T.shape(op.operands[0]))
    if prop is None:
        return [(0, 0)] * rank
    flat = list(prop.get_values())
    if len(flat) == 1:  # a splat
        flat = flat * (2 * rank)
    return [(int(flat[2 * d]), int(flat[2 * d + 1])) for d in range(rank)]


class _ReduceWindow(Rule):
    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _kind(self, op) -> str:
        kind = _region_kind(op.regions[0]) if len(op.operands) == 2 else None
        if kind is None:
            raise ZymaseError("this stablehlo.reduce_window has no derivative rule (one-input sums, maxima and "
                              "minima have one)", construct="stablehlo.reduce_window", location=location_of(op),
                              hint="pool with lax.reduce_window(x, init, lax.add / lax.max / lax.min, ...)")
        if any(d != 1 for d in _ints(op, "base_dilations", 1) + _ints(op, "window_dilations", 1)):
            raise ZymaseError("a dilated stablehlo.reduce_window has no derivative rule",
                              construct="stablehlo.reduce_window", location=location_of(op),
                              hint="lax.reduce_window with base_dilation and window_dilation of 1")
        return kind

    def _refuse_init(self, op, kind):
        raise ZymaseError(f"the initial value of a {kind} reduce_window is differentiated",
                          construct="stablehlo.reduce_window", location=location_of(op),
                          hint="start the reduction from a constant (-inf for a max pool)")

    def forward(self, ctx, op, tangents):
        E, kind = ctx.E, self._kind(op)
        tx, tinit = tangents
        if kind == "add":
            total = None
            if tx is not None:
                summed = op.create(operands=[tx, E.zero(op.operands[1].type)], result_types=[op.results[0].type],
                                   properties=dict(op.properties), regions=[op.regions[0].clone()])
                total = E.insert(summed).results[0]
            if tinit is not None:  # every output adds init once
                spread = T.broadcast(E, tinit, T.shape(op.results[0]), [])
                total = spread if total is None else E.add(total, spread)
            return [total]
        if tinit is not None:
            self._refuse_init(op, kind)
        if tx is None:
            return [None]
        x, init = (ctx.primal(v) for v in op.operands)
        paired = hlo.ReduceWindowOp.create(
            operands=[x, tx, init, E.zero(init.type)], result_types=[op.results[0].type, op.results[0].type],
            properties=dict(op.properties),
            regions=[_chooser(x.type.element_type, "GE" if kind == "maximum" else "LE")])
        return [E.insert(paired).results[1]]

    def reverse(self, ctx, op, dys):
        E, kind = ctx.E, self._kind(op)
        dy = dys[0]
        x, init = op.operands
        out = [None, None]
        if dy is None:
            return out
        if ctx.wants(init):
            if kind != "add":
                self._refuse_init(op, kind)
            out[1] = T.reduce(E, dy, range(len(T.shape(dy))))
        if not ctx.wants(x):
            return out
        window = _ints(op, "window_dimensions", 1)
        strides = _ints(op, "window_strides", 1)
        if kind == "add":
            out[0] = _spread_sum(E, dy, T.shape(x), window, strides, _padding(op))
            return out
        zero = E.zero(TensorType(x.type.element_type, []))
        properties = {"window_dimensions": op.window_dimensions, "window_strides": hlo.array(strides)}
        if op.properties.get("padding") is not None:
            properties["padding"] = op.properties["padding"]
        scattered = hlo.SelectAndScatterOp.create(
            operands=[ctx.primal(x), dy, zero], result_types=[x.type], properties=properties,
            regions=[_selector(x.type.element_type, "GE" if kind == "maximum" else "LE"),
                     T._reducer(x.type.element_type, hlo.AddOp)])
        out[0] = E.insert(scattered).results[0]
        return out


def _spread_sum(E, dy, x_shape, window, strides, padding):
    """The adjoint of a window sum: output j's adjoint goes to every input of its window.
    dy spread by the strides (interior padding) and padded by the window less the
    forward padding, then summed over windows of the same size with stride 1."""
    low, high = [], []
    for n, k, s, (pl, _), m in zip(x_shape, window, strides, padding, T.shape(dy)):
        lo = k - 1 - pl
        low.append(lo)
        high.append(n + k - 1 - lo - ((m - 1) * s + 1))
    padded = T.pad(E, dy, low, high, [s - 1 for s in strides])
    zero = E.zero(TensorType(dy.type.element_type, []))
    result_type = TensorType(dy.type.element_type, list(x_shape))
    op = hlo.ReduceWindowOp.create(operands=[padded, zero], result_types=[result_type],
                                   properties={"window_dimensions": hlo.array(window),
                                               "window_strides": hlo.array([1] * len(window))},
                                   regions=[T._reducer(dy.type.element_type, hlo.AddOp)])
    return E.insert(op).results[0]


def _compare(a, b, direction):
    return hlo.CompareOp.create(operands=[a, b], result_types=[TensorType(i1, [])],
                                properties={"comparison_direction": hlo.comparison(direction),
                                            "compare_type": hlo.comparison_type("FLOAT")})


def _selector(element_type, direction) -> Region:
    """select_and_scatter's select: keep the first element while it is >= (<=) the next."""
    scalar = TensorType(element_type, [])
    block = Block(arg_types=[scalar, scalar])
    keep = _compare(block.args[0], block.args[1], direction)
    block.add_op(keep)
    block.add_op(hlo.ReturnOp.create(operands=[keep.results[0]]))
    return Region(block)


def _chooser(element_type, direction) -> Region:
    """A reduce_window body over (value, tangent) pairs: the pair whose value wins."""
    scalar = TensorType(element_type, [])
    block = Block(arg_types=[scalar, scalar, scalar, scalar])  # (a, ta), (b, tb)
    a, ta, b, tb = block.args
    keep = _compare(a, b, direction)
    value = hlo.SelectOp.create(operands=[keep.results[0], a, b], result_types=[scalar])
    tangent = hlo.SelectOp.create(operands=[keep.results[0], ta, tb], result_types=[scalar])
    for o in (keep, value, tangent):
        block.add_op(o)
    block.add_op(hlo.ReturnOp.create(operands=[value.results[0], tangent.results[0]]))
    return Region(block)


REGISTRY.register(hlo.ReduceWindowOp, _ReduceWindow())
