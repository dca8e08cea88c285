"""The last step of a StableHLO derivative before XLA compiles it: a large zero pad of a
small tensor (the adjoint of a slice, of ``x[i]``) becomes a ``dynamic_update_slice``
of the small tensor into zeros that an ``optimization_barrier`` keeps apart.

Why: XLA's CPU backend emits a pad as one loop over the whole result that tests, element
by element, whether the element comes from the operand; that loop is not vectorized and
takes 2-3x the time of a plain fill of the same size. Behind the barrier the zeros are a
fill of their own (a broadcast: vectorized stores) and the update writes only the
operand's elements, in place. The barrier also keeps XLA from fusing the zeros into the
code that reads them, so only pads that are mostly zeros (``MIN_RATIO`` times their
operand, at least ``MIN_ELEMENTS`` elements) are rewritten: there the fill is the cost.
The values are the same; this is not one of the simplification patterns
(``hlo_rewrite_base.REWRITES``), which move pads around and would no longer see them.
"""

from __future__ import annotations

import math

from zymase.ir import IntegerType, ModuleOp, TensorType
from zymase.ir import stablehlo as hlo
from zymase.transforms.hlo_rewrite_base import ints, is_zero, make_splat

MIN_ELEMENTS = 1 << 16
MIN_RATIO = 8


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
