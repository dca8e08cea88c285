"""Rules for LLVM's aggregate values: ``extractvalue`` and ``insertvalue`` on structs and
arrays of floats (the float aggregates of :mod:`zymase.autodiff.type_rules`), which C's
complex numbers and C++'s ``std::complex`` are made of. A derivative moves between a
field and the aggregate at the same position; the other fields keep theirs."""

from zymase.autodiff.registry import REGISTRY, Rule
from zymase.autodiff.type_rules import is_differentiable_type
from zymase.ir import DenseArrayBase, i64, llvm


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


REGISTRY.register(llvm.ExtractValueOp, ExtractValueRule())
REGISTRY.register(llvm.InsertValueOp, InsertValueRule())
