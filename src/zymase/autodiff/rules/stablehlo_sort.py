"""The rule for ``stablehlo.sort`` (``jnp.sort``, ``lax.sort``, ``jnp.argsort``).

A sort is a permutation of every operand along one dimension, chosen by the comparator
from the values: its tangent is the tangent permuted the same way, its adjoint the
adjoint permuted back. Both are built from sorts with the primal comparator, so ties
and NaNs are ordered exactly as in the primal sort:

* forward: the tangents are sorted along with the operands (the comparator gets two
  more, unused, arguments per tangent);
* reverse: an iota sorted along with the operands gives the permutation p (result j
  came from position p[j]); sorting the adjoints by p puts each back where its value
  came from. That is the scatter through the taped indices, done as one more sort,
  which needs no gather/scatter dimension numbers for any rank and dimension.
"""

from __future__ import annotations

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import REGISTRY, Rule
from zymase.ir import Block, IntegerAttr, Region, TensorType, i1, i32, i64
from zymase.ir import stablehlo as hlo


def _dimension(op) -> int:
    d = op.properties.get("dimension")
    return d.value.data if d is not None else len(T.shape(op.operands[0])) - 1


def _with_extra_operands(op, extra: list) -> hlo.SortOp:
    """``op``'s sort with ``extra`` operands carried along (the comparator ignores them)."""
    comparator = op.regions[0].clone()
    block = comparator.blocks[0]
    for v in extra:
        scalar = TensorType(v.type.element_type, [])
        block.insert_arg(scalar, len(block.args))
        block.insert_arg(scalar, len(block.args))
    operands = [*op.operands, *extra]
    return hlo.SortOp.create(operands=operands, result_types=[v.type for v in operands],
                             properties=dict(op.properties), regions=[comparator])


def _by_first_operand(key, values: list, dim: int) -> hlo.SortOp:
    """Sort ``values`` along ``dim`` by the integer tensor ``key``, ascending."""
    scalar_types = [TensorType(v.type.element_type, []) for v in (key, *values)]
    block = Block(arg_types=[t for t in scalar_types for _ in (0, 1)])
    less = hlo.CompareOp.create(operands=[block.args[0], block.args[1]], result_types=[TensorType(i1, [])],
                                properties={"comparison_direction": hlo.comparison("LT"),
                                            "compare_type": hlo.comparison_type("SIGNED")})
    block.add_op(less)
    block.add_op(hlo.ReturnOp.create(operands=[less.results[0]]))
    operands = [key, *values]
    return hlo.SortOp.create(operands=operands, result_types=[v.type for v in operands],
                             properties={"dimension": IntegerAttr(dim, i64)}, regions=[Region(block)])


class _Sort(Rule):
    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def forward(self, ctx, op, tangents):
        E = ctx.E
        floats = [i for i, v in enumerate(op.operands) if hlo.is_float_tensor(v.type)]
        if all(tangents[i] is None for i in floats):
            return [None] * len(op.results)
        carried = [tangents[i] if tangents[i] is not None else E.zero(op.operands[i].type) for i in floats]
        sorted_op = E.insert(_with_extra_operands(op, carried))
        out = [None] * len(op.results)
        for k, i in enumerate(floats):
            out[i] = sorted_op.results[len(op.operands) + k]
        return out

    def reverse(self, ctx, op, dys):
        E = ctx.E
        out = [None] * len(op.operands)
        wanted = [i for i, (v, d) in enumerate(zip(op.operands, dys)) if d is not None and ctx.wants(v)]
        if not wanted:
            return out
        dim = _dimension(op)
        shape = T.shape(op.operands[0])
        iota = E.v(hlo.IotaOp.create(properties={"iota_dimension": IntegerAttr(dim, i64)},
                                     result_types=[TensorType(i32, list(shape))]))
        permutation = E.insert(_with_extra_operands(op, [iota])).results[len(op.operands)]
        unsorted = E.insert(_by_first_operand(permutation, [dys[i] for i in wanted], dim))
        for k, i in enumerate(wanted):
            out[i] = unsorted.results[1 + k]
        return out


REGISTRY.register(hlo.SortOp, _Sort())
