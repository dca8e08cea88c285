"""Rules for LLVM's aggregate and vector values: ``extractvalue`` and ``insertvalue`` on
structs and arrays of floats, ``extractelement``, ``insertelement`` and ``shufflevector``
on small float vectors (the float aggregates and vectors of
:mod:`zymase.autodiff.type_rules`), which C's complex numbers and C++'s ``std::complex``
are made of. A derivative moves between a field (lane) and the aggregate (vector) at the
same position; the other fields keep theirs."""

from zymase.autodiff.registry import REGISTRY, Rule
from zymase.autodiff.type_rules import is_differentiable_type
from zymase.ir import DenseArrayBase, i32, i64, llvm, llvm_ext


def _at(op) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(op.position.get_values()))


class ExtractValueRule(Rule):
    """``r = extractvalue agg[pos]``: ``dagg[pos] += dr``; ``tr = tagg[pos]``."""

    def propagates(self, op, index):
        return is_differentiable_type(op.container.type) and is_differentiable_type(op.results[0].type)

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None or not ctx.wants(op.container):
            return [None]
        E = ctx.E
        return [E.v(llvm.InsertValueOp(_at(op), E.zero(op.container.type), dy))]

    def forward(self, ctx, op, tangents):
        (t,) = tangents
        if t is None:
            return [None]
        return [ctx.E.v(llvm.ExtractValueOp(_at(op), t, op.results[0].type))]


class InsertValueRule(Rule):
    """``r = insertvalue agg, v[pos]``: ``dv += dr[pos]``, ``dagg += dr`` with ``pos``
    zeroed (that field of ``agg`` is overwritten); ``tr = insertvalue tagg, tv[pos]``."""

    def propagates(self, op, index):
        return is_differentiable_type(op.results[0].type)

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None:
            return [None, None]
        E = ctx.E
        d_container = d_value = None
        if ctx.wants(op.container):
            d_container = E.v(llvm.InsertValueOp(_at(op), dy, E.zero(op.value.type)))
        if ctx.wants(op.value):
            d_value = E.v(llvm.ExtractValueOp(_at(op), dy, op.value.type))
        return [d_container, d_value]

    def forward(self, ctx, op, tangents):
        t_container, t_value = tangents
        if t_container is None and t_value is None:
            return [None]
        E = ctx.E
        t = op.results[0].type
        base = t_container if t_container is not None else E.zero(t)
        value = t_value if t_value is not None else E.zero(op.value.type)
        return [E.v(llvm.InsertValueOp(_at(op), base, value))]


class ExtractElementRule(Rule):
    """``r = extractelement v[i]``: ``dv[i] += dr``; ``tr = tv[i]`` (``i`` is a primal
    integer, constant or not)."""

    def propagates(self, op, index):
        return index == 0 and is_differentiable_type(op.vector.type)

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None or not ctx.wants(op.vector):
            return [None, None]
        E = ctx.E
        return [E.v(llvm.InsertElementOp(E.zero(op.vector.type), dy, ctx.primal(op.position))), None]

    def forward(self, ctx, op, tangents):
        t = tangents[0]
        if t is None:
            return [None]
        return [ctx.E.v(llvm_ext.ExtractElementOp(t, ctx.primal(op.position)))]


class InsertElementRule(Rule):
    """``r = insertelement v, x[i]``: ``dx += dr[i]``, ``dv += dr`` with lane ``i``
    zeroed; ``tr = insertelement tv, tx[i]``."""

    def propagates(self, op, index):
        return index in (0, 1) and is_differentiable_type(op.results[0].type)

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None:
            return [None, None, None]
        E = ctx.E
        where = ctx.primal(op.index)
        d_vector = d_value = None
        if ctx.wants(op.vector):
            d_vector = E.v(llvm.InsertElementOp(dy, E.zero(op.value.type), where))
        if ctx.wants(op.value):
            d_value = E.v(llvm_ext.ExtractElementOp(dy, where))
        return [d_vector, d_value, None]

    def forward(self, ctx, op, tangents):
        t_vector, t_value = tangents[0], tangents[1]
        if t_vector is None and t_value is None:
            return [None]
        E = ctx.E
        base = t_vector if t_vector is not None else E.zero(op.results[0].type)
        value = t_value if t_value is not None else E.zero(op.value.type)
        return [E.v(llvm.InsertElementOp(base, value, ctx.primal(op.index)))]


class ShuffleVectorRule(Rule):
    """``r = shufflevector a, b, mask``: lane ``j`` of ``r`` is lane ``mask[j]`` of
    ``a ++ b`` (``-1``: undefined, no derivative). Forward: the same shuffle of the
    tangents; reverse: each result lane's adjoint added to the lane it came from (a lane
    may be read several times)."""

    def propagates(self, op, index):
        return is_differentiable_type(op.results[0].type)

    def forward(self, ctx, op, tangents):
        ta, tb = tangents
        if ta is None and tb is None:
            return [None]
        E = ctx.E
        ta = ta if ta is not None else E.zero(op.v1.type)
        tb = tb if tb is not None else E.zero(op.v2.type)
        return [E.v(llvm.ShuffleVectorOp(ta, tb, op.mask, op.results[0].type))]

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None:
            return [None, None]
        E = ctx.E
        width = op.v1.type.get_shape()[0]
        adjoints: list = [E.zero(op.v1.type) if ctx.wants(op.v1) else None,
                          E.zero(op.v2.type) if ctx.wants(op.v2) else None]
        for j, lane in enumerate(op.mask.get_values()):
            if lane < 0:
                continue
            which, at = divmod(lane, width)
            if adjoints[which] is None:
                continue
            d_lane = E.v(llvm_ext.ExtractElementOp(dy, E.iconst(j, i32)))
            where = E.iconst(at, i32)
            old = E.v(llvm_ext.ExtractElementOp(adjoints[which], where))
            adjoints[which] = E.v(llvm.InsertElementOp(adjoints[which], E.add(old, d_lane), where))
        return adjoints


REGISTRY.register(llvm.ExtractValueOp, ExtractValueRule())
REGISTRY.register(llvm.InsertValueOp, InsertValueRule())
REGISTRY.register(llvm_ext.ExtractElementOp, ExtractElementRule())
REGISTRY.register(llvm.InsertElementOp, InsertElementRule())
REGISTRY.register(llvm.ShuffleVectorOp, ShuffleVectorRule())
