"""How a finished StableHLO derivative reaches XLA's CPU backend: two rewrites that change
no value but the code XLA generates (``lower``, the last step of ``frontends/jax``).
They are not simplification patterns (``hlo_rewrite_base.REWRITES``): they make the
program larger, and the patterns would undo or no longer see them.

* **Large zero pads** of a small tensor (the adjoint of a slice, of ``x[i]``) become a
  ``dynamic_update_slice`` of the small tensor into zeros that an ``optimization_barrier``
  keeps apart. XLA emits a pad as one loop over the whole result that tests, element by
  element, whether the element comes from the operand; that loop is not vectorized and
  takes 2-3x the time of a plain fill of the same size. Behind the barrier the zeros are
  a fill of their own (a broadcast: vectorized stores) and the update writes only the
  operand's elements, in place. The barrier also keeps XLA from fusing the zeros into
  the code that reads them, so only pads that are mostly zeros (``MIN_RATIO`` times their
  operand, at least ``MIN_ELEMENTS`` elements) are rewritten: there the fill is the cost.
* **Small contractions** (``dot_general`` with at most ``SMALL_DOT`` products, such as the
  4x4 transforms of the hand model's bone chain) become a multiply of broadcasts and a
  reduce. XLA runs every dot as a library call of its own (a few microseconds each,
  whatever the size); a multiply and a reduce fuse with the elementwise code around
  them. The sum's order may change, as XLA's own reductions change it.
"""

from __future__ import annotations

import math

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.flavor import Emitter
from zymase.autodiff.hlo_flavor import HLO
from zymase.ir import IntegerType, ModuleOp, TensorType
from zymase.ir import stablehlo as hlo
from zymase.transforms.hlo_rewrite_base import ints, is_zero, make_splat

MIN_ELEMENTS = 1 << 16
MIN_RATIO = 8
SMALL_DOT = 512  # products (result elements x contracted elements)


def _mostly_zeros(pad) -> bool:
    low, high = ints(pad.edge_padding_low), ints(pad.edge_padding_high)
    if any(ints(pad.interior_padding)) or min(low + high, default=0) < 0 or not is_zero(pad.operands[1]):
        return False
    size = math.prod(pad.results[0].type.get_shape())
    return size >= MIN_ELEMENTS and size >= MIN_RATIO * math.prod(pad.operands[0].type.get_shape())


def fill_zero_pads(module: ModuleOp) -> int:
    """Rewrite the pads of ``module`` that are mostly zeros (see the module doc); returns
    how many."""
    pads = [op for op in module.walk() if isinstance(op, hlo.PadOp) and _mostly_zeros(op)]
    index_type = TensorType(IntegerType(64), [])
    for pad in pads:
        block, result_type = pad.parent_block(), pad.results[0].type
        zeros = hlo.BroadcastInDimOp.create(operands=[pad.operands[1]], result_types=[result_type],
                                            properties={"broadcast_dimensions": hlo.array([])})
        apart = hlo.OptimizationBarrierOp.create(operands=[zeros.results[0]], result_types=[result_type])
        starts = [make_splat(lo, index_type) for lo in ints(pad.edge_padding_low)]
        update = hlo.DynamicUpdateSliceOp.create(
            operands=[apart.results[0], pad.operands[0], *(s.results[0] for s in starts)], result_types=[result_type])
        block.insert_ops_before([zeros, apart, *starts, update], pad)
        pad.results[0].replace_all_uses_with(update.results[0])
        pad.detach()
        pad.erase()
    return len(pads)


def _dims(op) -> tuple[list[int], list[int], list[int], list[int]]:
    d = op.dot_dimension_numbers
    return (hlo.dims_field(d, "lhs_batching_dimensions"), hlo.dims_field(d, "rhs_batching_dimensions"),
            hlo.dims_field(d, "lhs_contracting_dimensions"), hlo.dims_field(d, "rhs_contracting_dimensions"))


def _small(op) -> bool:
    types = {v.type.element_type for v in (*op.operands, op.results[0])}
    if len(types) != 1 or not hlo.is_float_tensor(op.results[0].type):
        return False  # a contraction that widens (bf16 x bf16 -> f32), or of integers, stays one
    lhs = op.operands[0].type.get_shape()
    contracted = math.prod(lhs[d] for d in _dims(op)[2])
    return math.prod(op.results[0].type.get_shape()) * contracted <= SMALL_DOT


def unroll_small_dots(module: ModuleOp) -> int:
    """Rewrite the small ``dot_general`` ops of ``module`` as multiply and reduce (see the
    module doc); returns how many."""
    dots = [op for op in module.walk() if isinstance(op, hlo.DotGeneralOp) and _small(op)]
    for op in dots:
        lhs, rhs = op.operands
        lb, rb, lc, rc = _dims(op)
        lf = [d for d in range(len(lhs.type.get_shape())) if d not in lb + lc]
        rf = [d for d in range(len(rhs.type.get_shape())) if d not in rb + rc]
        # the product's dims: batch, lhs free, rhs free, contracted (the result's order, then
        # the contracted dims, which the reduce removes)
        ls, rs = lhs.type.get_shape(), rhs.type.get_shape()
        full = [ls[d] for d in lb] + [ls[d] for d in lf] + [rs[d] for d in rf] + [ls[d] for d in lc]
        nb, nl, nr = len(lb), len(lf), len(rf)
        batch, lfree = list(range(nb)), list(range(nb, nb + nl))
        rfree, contracted = list(range(nb + nl, nb + nl + nr)), list(range(nb + nl + nr, len(full)))
        E = Emitter(HLO, module).before(op)
        a = T.broadcast(E, T.transpose(E, lhs, lb + lf + lc), full, batch + lfree + contracted)
        b = T.broadcast(E, T.transpose(E, rhs, rb + rf + rc), full, batch + rfree + contracted)
        product = E.v(hlo.MultiplyOp.create(operands=[a, b], result_types=[a.type]))
        result = T.reduce(E, product, contracted)
        op.results[0].replace_all_uses_with(result)
        op.detach()
        op.erase()
    return len(dots)


def lower(module: ModuleOp) -> None:
    """Both rewrites, on the finished derivative module."""
    fill_zero_pads(module)
    unroll_small_dots(module)
